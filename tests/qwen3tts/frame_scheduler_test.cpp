// Continuous batching: requests on several threads, joining and leaving at different frames, with
// greedy and seeded sampling, warming up apart or not, each get the frames FrameGenerator gives
// them alone; a request that is cancelled or whose callback fails ends alone; back-pressure holds a
// request, not the batch.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "qwen3tts/frame_generator.h"
#include "qwen3tts/frame_scheduler.h"
#include "qwen3tts/prompt.h"
#include "qwen3tts/talker_goldens.h"
#include "talkbox/error.h"

namespace talkbox::qwen3tts {
namespace {

using Frames = std::vector<std::vector<int32_t>>;

struct Job {
    Prompt prompt;
    GenerationOptions options;
};

// The golden cases of one model, each in greedy and seeded-sampling form, frame limits differing.
std::vector<Job> jobs_for(const Model& model, const std::string& variant) {
    std::vector<Job> jobs;
    uint32_t limit = 6;
    for (const testing::TalkerCase& c : testing::talker_cases()) {
        if (c.variant != variant) continue;
        for (const bool greedy : {true, false}) {
            Job j{build_prompt(model, c.request()),
                  greedy ? GenerationOptions::greedy(model.hparams()) : GenerationOptions::defaults(model.hparams())};
            j.options.max_frames = limit++;
            j.options.seed = 11 + jobs.size();
            jobs.push_back(std::move(j));
        }
    }
    return jobs;
}

Frames alone(const Model& model, const Job& j) {
    FrameGenerator g(model);
    Frames frames;
    g.generate(j.prompt, j.options, [&](const std::vector<int32_t>& f) { frames.push_back(f); });
    return frames;
}

TEST(FrameScheduler, ConcurrentRequestsGetTheirFramesAlone) {
    const std::string variant = "tiny-0.6B-CustomVoice";
    const Model& model = testing::tiny_model(variant);
    const std::vector<Job> jobs = jobs_for(model, variant);
    ASSERT_GE(jobs.size(), 4u);
    std::vector<Frames> expected;
    for (const Job& j : jobs) expected.push_back(alone(model, j));

    FrameScheduler scheduler(model, lm::KvType::F32, 4);  // fewer slots than requests: some wait their turn
    std::vector<Frames> got(jobs.size());
    std::vector<std::thread> threads;
    for (size_t i = 0; i < jobs.size(); ++i) {
        threads.emplace_back([&, i] {
            // Staggered starts: later requests join a batch already running.
            std::this_thread::sleep_for(std::chrono::milliseconds(5 * i));
            // Every other request warms up (its first frames step apart from the running ones).
            const auto frame = [&](const std::vector<int32_t>& f) { got[i].push_back(f); };
            scheduler.generate(jobs[i].prompt, jobs[i].options, frame, nullptr, {}, i % 2 == 0 ? 0 : i);
        });
    }
    for (auto& t : threads) t.join();
    for (size_t i = 0; i < jobs.size(); ++i) EXPECT_EQ(got[i], expected[i]) << "request " << i;
    EXPECT_GT(scheduler.largest_batch(), 1u) << "the requests never ran together";
    EXPECT_LE(scheduler.largest_batch(), 4u);
}

TEST(FrameScheduler, CancelAndFailureEndOneRequest) {
    const std::string variant = "tiny-0.6B-CustomVoice";
    const Model& model = testing::tiny_model(variant);
    const std::vector<Job> jobs = jobs_for(model, variant);
    const Frames expected = alone(model, jobs[1]);
    FrameScheduler scheduler(model, lm::KvType::F32, 8);

    std::atomic<bool> cancel{false};
    Frames cancelled, survivor;
    GenerationResult cancelled_result;
    bool failure_seen = false;
    std::thread a([&] {
        cancelled_result = scheduler.generate(jobs[0].prompt, jobs[0].options,
                                              [&](const std::vector<int32_t>& f) {
                                                  cancelled.push_back(f);
                                                  if (cancelled.size() == 2) cancel = true;
                                              },
                                              &cancel);
    });
    std::thread b([&] {
        try {
            scheduler.generate(jobs[2].prompt, jobs[2].options, [&](const std::vector<int32_t>&) {
                throw std::runtime_error("the client went away");
            });
        } catch (const std::runtime_error& e) {
            failure_seen = std::string(e.what()) == "the client went away";
        }
    });
    std::thread c([&] {
        scheduler.generate(jobs[1].prompt, jobs[1].options, [&](const std::vector<int32_t>& f) { survivor.push_back(f); });
    });
    a.join();
    b.join();
    c.join();
    EXPECT_EQ(cancelled_result.stop, StopReason::Cancelled);
    EXPECT_EQ(cancelled.size(), 2u);
    EXPECT_TRUE(failure_seen);
    EXPECT_EQ(survivor, expected);
    // Invalid options are refused on the caller's thread, before joining.
    GenerationOptions bad = jobs[0].options;
    bad.repetition_penalty = 0;
    EXPECT_THROW(scheduler.generate(jobs[0].prompt, bad, [](const std::vector<int32_t>&) {}), Error);
}

TEST(FrameScheduler, BackPressureHoldsOnlyThatRequest) {
    const std::string variant = "tiny-0.6B-CustomVoice";
    const Model& model = testing::tiny_model(variant);
    const std::vector<Job> jobs = jobs_for(model, variant);
    FrameScheduler scheduler(model, lm::KvType::F32, 8);
    std::atomic<bool> open{false};
    std::atomic<size_t> held_frames{0};
    Frames held, free_running;
    std::thread held_thread([&] {
        scheduler.generate(jobs[0].prompt, jobs[0].options,
                           [&](const std::vector<int32_t>& f) {
                               held.push_back(f);
                               ++held_frames;
                           },
                           nullptr, [&] { return open.load() || held_frames.load() < 1; });
    });
    // The other request runs to its end while the first waits after one frame.
    scheduler.generate(jobs[1].prompt, jobs[1].options, [&](const std::vector<int32_t>& f) { free_running.push_back(f); });
    EXPECT_EQ(held_frames.load(), 1u);
    open = true;
    scheduler.wake();
    held_thread.join();
    EXPECT_EQ(held, alone(model, jobs[0]));
    EXPECT_EQ(free_running, alone(model, jobs[1]));
}

}  // namespace
}  // namespace talkbox::qwen3tts
