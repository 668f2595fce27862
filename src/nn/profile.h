// Where a graph spends its time, op by op, and host steps timed beside it (benchmarks, --profile).
#pragma once

#include <string>

#include "core/backend.h"
#include "core/clock.h"
#include "ggml.h"

namespace talkbox::nn {

// Runs `graph` node by node (same results as one run), adding each node's wall and CPU time to
// `times` under `prefix` and its op and operand types, e.g. "estimator MUL_MAT q8_0 x f32
// (weights)". Without `times`, one ordinary run.
void compute_by_op(const Backend& backend, ggml_cgraph* graph, StageTimes* times, const std::string& prefix);

// Runs host code, adding its wall and CPU time to `times` under `stage` when `times` is given.
class HostTimer {
public:
    HostTimer(StageTimes* times, std::string stage);
    ~HostTimer();
    HostTimer(const HostTimer&) = delete;
    HostTimer& operator=(const HostTimer&) = delete;

private:
    StageTimes* times_;
    std::string stage_;
    Stopwatch watch_;
};

}  // namespace talkbox::nn
