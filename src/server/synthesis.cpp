#include "server/synthesis.h"

#include <chrono>
#include <cmath>
#include <new>
#include <optional>

#include "audio/resample.h"
#include "core/strings.h"
#include "talkbox/error.h"

namespace talkbox::server {

std::string sse_event(const nlohmann::json& data) {
    return "data: " + data.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n\n";
}
std::string sse_audio_delta(const void* bytes, size_t n) {
    return sse_event({{"type", "speech.audio.delta"}, {"audio", base64_encode(bytes, n)}});
}
std::string sse_segment(const Caption& caption, int sample_rate) {
    nlohmann::json event = nlohmann::json::parse(caption_json(caption, sample_rate));
    event["type"] = "speech.segment";
    return sse_event(event);
}

namespace {

// A part's audio at its model's sample rate on its way to the response's, when they differ: held
// until each of its segments ends (with the pause after it), then resampled as one piece
// (audio::resample) to the length that its place in the part gives it, round(sample · to / from),
// the rule by which at_output_rate() maps the part's caption positions too.
class PartResampler {
public:
    PartResampler(int from_rate, int to_rate, AudioCallback out) : from_(from_rate), to_(to_rate), out_(std::move(out)) {}
    void write(const float* pcm, size_t n) {
        held_.insert(held_.end(), pcm, pcm + n);
        in_ += n;
    }
    size_t at_output_rate(size_t sample) const {
        return static_cast<size_t>(std::llround(static_cast<double>(sample) * to_ / from_));
    }
    void flush() {
        if (held_.empty()) return;
        std::vector<float> pcm = audio::resample(held_, from_, to_);
        held_.clear();
        pcm.resize(at_output_rate(in_) - written_);  // resample() gives ceil(n · to / from): a sample at most
        written_ += pcm.size();
        out_(pcm.data(), pcm.size());
    }
    size_t written() const { return written_; }

private:
    int from_, to_;
    AudioCallback out_;
    std::vector<float> held_;
    size_t in_ = 0, written_ = 0;
};

}  // namespace

void Synthesis::start(std::vector<ModelPart> parts, const std::function<LongFormOptions(const Capabilities&)>& long_form, int sample_rate,
                      const SynthesisOutput& output, Clock::time_point deadline) {
    output_ = output;
    deadline_ = deadline;
    parts_ = std::move(parts);
    for (const ModelPart& part : parts_) {
        long_form_.push_back(long_form(part.model->capabilities()));
        if (!leases_.count(part.model)) leases_.emplace(part.model, part.model->lease());
    }
    sample_rate_ = sample_rate;
    speed_ = std::make_unique<audio::SpeedAdjuster>(sample_rate, output.speed, [this](const float* pcm, size_t n) { deliver(pcm, n); });
    thread_ = std::thread([this] {
        try {
            for (size_t k = 0; k < parts_.size() && !result_.cancelled; ++k) speak_part(k);
            if (!result_.cancelled) speed_->finish();  // what the stretcher still holds
        } catch (...) {
            std::lock_guard<std::mutex> lock(m_);
            error_ = std::current_exception();
        }
        std::lock_guard<std::mutex> lock(m_);
        pending_ += held_;  // the stretcher's tail
        held_.clear();
        finished_ = true;
        cv_.notify_all();
    });
}

void Synthesis::speak_part(size_t k) {
    const ModelPart& part = parts_[k];
    const AudioCallback to_stretcher = [this](const float* pcm, size_t n) { speed_->write(pcm, n); };
    std::optional<PartResampler> resampler;
    if (const int rate = part.model->capabilities().sample_rate; rate != sample_rate_) resampler.emplace(rate, sample_rate_, to_stretcher);
    const auto at_output_rate = [&](size_t sample) { return resampler ? resampler->at_output_rate(sample) : sample; };
    // Its segments' numbers and samples continue those of the parts before it.
    const size_t first_index = result_.segments, first_sample = result_.samples;
    std::function<void(const SegmentDone&)> on_segment;
    if (output_.timestamps || resampler) {
        on_segment = [&](const SegmentDone& d) {
            if (resampler) resampler->flush();
            if (!output_.timestamps) return;
            SegmentDone whole = d;
            whole.index += first_index;
            whole.first_sample = first_sample + at_output_rate(d.first_sample);
            whole.end_sample = first_sample + at_output_rate(d.end_sample);
            segment_done(segment_caption(part.segments[d.index], whole, part.request.speaker));
        };
    }
    LongFormResult done = speak_long_form(
        *leases_.at(part.model), part.request, part.segments, long_form_[k],
        resampler ? AudioCallback([&](const float* pcm, size_t n) { resampler->write(pcm, n); }) : to_stretcher, on_segment,
        StreamOptions{}, &cancel_);
    if (resampler) {
        resampler->flush();
        done.samples = resampler->written();  // at the response's rate
    }
    append_result(result_, done);
}

void Synthesis::deliver(const float* pcm, size_t n) {
    if (n == 0) return;
    std::lock_guard<std::mutex> lock(m_);
    if (first_audio_s_ < 0) first_audio_s_ = seconds_since(arrived);
    samples_out_ += n;
    if (output_.streaming) {
        std::vector<uint8_t> bytes;
        audio::append_samples(bytes, pcm, n, output_.format);
        if (output_.sse) {
            (output_.timestamps ? held_ : pending_) += sse_audio_delta(bytes.data(), bytes.size());
        } else {
            pending_.append(bytes.begin(), bytes.end());
        }
    } else {
        samples_.insert(samples_.end(), pcm, pcm + n);
    }
    cv_.notify_all();
}

void Synthesis::segment_done(Caption caption) {
    std::lock_guard<std::mutex> lock(m_);
    if (!output_.streaming) {
        captions_.push_back(std::move(caption));
        return;
    }
    // Streaming, the stretcher's output is not all there yet: the times scale by the speed.
    std::vector<Caption> one{std::move(caption)};
    scale_captions(one, 1.0 / output_.speed);
    pending_ += sse_segment(one[0], sample_rate_) + held_;
    held_.clear();
    cv_.notify_all();
}

std::vector<Caption> Synthesis::captions() const {
    std::lock_guard<std::mutex> lock(m_);
    std::vector<Caption> out = captions_;
    if (result_.samples > 0) scale_captions(out, static_cast<double>(samples_out_) / static_cast<double>(result_.samples));
    return out;
}

void Synthesis::watch(const std::function<bool()>& gone) {
    if (cancel_) return;
    if (gone()) {
        mark_client_gone();
    } else if (Clock::now() > deadline_) {
        timed_out_ = true;
        cancel_ = true;
    }
}

bool Synthesis::next(std::string& chunk, const std::function<bool()>& gone) {
    bool done = false;
    {
        std::unique_lock<std::mutex> lock(m_);
        cv_.wait_for(lock, std::chrono::milliseconds(50), [&] { return !pending_.empty() || finished_; });
        chunk.swap(pending_);
        pending_.clear();
        done = finished_;
    }
    if (!done) watch(gone);
    return done;
}

void Synthesis::wait_for_audio_or_end(const std::function<bool()>& gone) {
    std::unique_lock<std::mutex> lock(m_);
    while (!finished_ && !(output_.streaming && !pending_.empty())) {
        cv_.wait_for(lock, std::chrono::milliseconds(50));
        lock.unlock();
        watch(gone);
        lock.lock();
    }
}

bool Synthesis::has_pending_bytes() {
    std::lock_guard<std::mutex> lock(m_);
    return !pending_.empty();
}

void Synthesis::stop() {
    cancel_ = true;
    if (thread_.joinable()) thread_.join();
}

std::optional<ApiError> Synthesis::failure(double timeout_s) const {
    std::exception_ptr error;
    {
        std::lock_guard<std::mutex> lock(m_);
        error = error_;
    }
    if (error) {
        try {
            std::rethrow_exception(error);
        } catch (const ApiError& e) {
            return e;
        } catch (const Error& e) {
            return from_error(e);
        } catch (const std::bad_alloc&) {
            return ApiError(503, "server_error", "out_of_memory", "the server ran out of memory for this request");
        } catch (const std::exception& e) {
            return ApiError(500, "server_error", "internal_error", std::string("internal error: ") + e.what());
        }
    }
    if (client_gone_) return ApiError(499, "invalid_request_error", "cancelled", "the client closed the connection");
    if (timed_out_) {
        return ApiError(504, "server_error", "timeout",
                        "the synthesis took longer than this server's limit of " + nlohmann::json(timeout_s).dump() + " s");
    }
    return std::nullopt;
}

}  // namespace talkbox::server
