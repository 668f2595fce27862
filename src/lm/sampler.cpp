#include "lm/sampler.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <string>

#include "talkbox/error.h"

namespace talkbox::lm {

namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// softmax(scores) in double; returns the sum before normalisation (0 when nothing is finite).
double softmax(const std::vector<float>& scores, std::vector<double>& probs) {
    float max = kNegInf;
    for (float s : scores) max = std::max(max, s);
    probs.assign(scores.size(), 0.0);
    if (!std::isfinite(max)) return 0.0;
    double sum = 0.0;
    for (size_t i = 0; i < scores.size(); ++i) {
        probs[i] = std::exp(static_cast<double>(scores[i]) - max);
        sum += probs[i];
    }
    for (double& p : probs) p /= sum;
    return sum;
}

}  // namespace

void SamplingParams::validate(const char* what) const {
    const std::string w = what;
    if (!(temperature >= 0.0f) || !std::isfinite(temperature)) {
        throw Error(ErrorKind::InvalidArgument, w + " temperature must be a finite value >= 0, got " + std::to_string(temperature));
    }
    if (!(top_p > 0.0f && top_p <= 1.0f)) {
        throw Error(ErrorKind::InvalidArgument, w + " top_p must be in (0, 1], got " + std::to_string(top_p));
    }
    if (!(min_p >= 0.0f && min_p <= 1.0f)) {
        throw Error(ErrorKind::InvalidArgument, w + " min_p must be in [0, 1], got " + std::to_string(min_p));
    }
}

void apply_repetition_penalty(std::vector<float>& scores, const std::vector<int32_t>& history, float penalty) {
    if (penalty == 1.0f) return;
    // Applying twice to a repeated id would compound the penalty; gather-then-scatter does not.
    std::vector<int32_t> seen(history);
    std::sort(seen.begin(), seen.end());
    seen.erase(std::unique(seen.begin(), seen.end()), seen.end());
    for (int32_t id : seen) {
        if (id < 0 || static_cast<size_t>(id) >= scores.size()) continue;
        float& s = scores[id];
        s = s < 0 ? s * penalty : s / penalty;
    }
}

int32_t argmax(const std::vector<float>& scores) {
    int32_t best = -1;
    for (size_t i = 0; i < scores.size(); ++i) {
        if (std::isnan(scores[i])) continue;
        if (best < 0 || scores[i] > scores[best]) best = static_cast<int32_t>(i);
    }
    if (best < 0 || scores[best] == kNegInf) throw Error(ErrorKind::Internal, "no finite score to choose a token from");
    return best;
}

SamplerChain& SamplerChain::repetition_penalty(float penalty) {
    if (penalty != 1.0f) steps_.push_back({Kind::RepetitionPenalty, penalty, 0});
    return *this;
}
SamplerChain& SamplerChain::temperature(float t) {
    if (t != 1.0f && t != 0.0f) steps_.push_back({Kind::Temperature, t, 0});
    return *this;
}
SamplerChain& SamplerChain::top_k(uint32_t k) {
    if (k != 0) steps_.push_back({Kind::TopK, 0, k});
    return *this;
}
SamplerChain& SamplerChain::top_p(float p) {
    if (p < 1.0f) steps_.push_back({Kind::TopP, p, 0});
    return *this;
}
SamplerChain& SamplerChain::min_p(float p) {
    if (p > 0.0f) steps_.push_back({Kind::MinP, p, 0});
    return *this;
}

void SamplerChain::apply(std::vector<float>& scores, const std::vector<int32_t>& history) {
    const size_t n = scores.size();
    for (const Step& step : steps_) {
        switch (step.kind) {
            case Kind::RepetitionPenalty:
                apply_repetition_penalty(scores, history, step.value);
                break;
            case Kind::Temperature:
                for (float& s : scores) s /= step.value;
                break;
            case Kind::TopK: {
                if (step.k >= n) break;
                scratch_.assign(scores.begin(), scores.end());
                std::nth_element(scratch_.begin(), scratch_.begin() + (step.k - 1), scratch_.end(), std::greater<float>());
                const float kth = scratch_[step.k - 1];
                for (float& s : scores) {
                    if (s < kth) s = kNegInf;
                }
                break;
            }
            case Kind::MinP: {
                // MinPLogitsWarper: p_i < min_p · p_max  ⇔  exp(s_i - s_max) < min_p; the top id always stays.
                const int32_t top = argmax(scores);
                const double max = scores[top];
                for (size_t i = 0; i < n; ++i) {
                    if (static_cast<int32_t>(i) != top && std::exp(static_cast<double>(scores[i]) - max) < step.value) scores[i] = kNegInf;
                }
                break;
            }
            case Kind::TopP: {
                // Ascending order; drop the low tail whose cumulative probability stays <= 1 - top_p,
                // always keeping the most likely token.
                softmax(scores, probs_);
                // Ids already removed (-inf, e.g. by top-k) would sort first and add nothing to the sum, so
                // only the others are ordered: the same result without sorting the whole vocabulary.
                order_.clear();
                for (size_t i = 0; i < n; ++i) {
                    if (scores[i] != kNegInf) order_.push_back(static_cast<int32_t>(i));
                }
                std::stable_sort(order_.begin(), order_.end(), [&](int32_t a, int32_t b) { return scores[a] < scores[b]; });
                double cum = 0.0;
                for (size_t i = 0; i + 1 < order_.size(); ++i) {
                    cum += probs_[order_[i]];
                    if (cum > 1.0 - step.value) break;
                    scores[order_[i]] = kNegInf;
                }
                break;
            }
        }
    }
}

SamplerChain& SamplerChain::transformers(const SamplingParams& p) { return temperature(p.temperature).top_k(p.top_k).min_p(p.min_p).top_p(p.top_p); }

SamplerChain& SamplerChain::clear() {
    steps_.clear();
    return *this;
}

int32_t Sampler::select(std::vector<float>& scores, const SamplingParams& p) {
    if (p.greedy()) return argmax(scores);
    warp_.clear().transformers(p).apply(scores);
    return draw(scores);
}

int32_t Sampler::draw(const std::vector<float>& scores) {
    const size_t n = scores.size();
    const double total = softmax(scores, probs_);
    if (!(total > 0.0 && std::isfinite(total))) throw Error(ErrorKind::Internal, "no finite score to sample a token from");
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng_);
    double cum = 0.0;
    int32_t last = -1;
    for (size_t i = 0; i < n; ++i) {
        if (probs_[i] <= 0.0) continue;
        last = static_cast<int32_t>(i);
        cum += probs_[i];
        if (u < cum) return last;
    }
    return last;  // u landed in the rounding gap above the last cumulative sum
}

}  // namespace talkbox::lm
