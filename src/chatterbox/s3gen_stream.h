// Streaming S3Gen: a sentence's waveform in chunks while T3 is still producing its tokens.
// Each render runs the flow on prompt + every token so far (as CosyVoice2's finalize=False
// streaming does) and hands the mel frames that the encoder's 3-token look-ahead has settled to a
// HiftStream, which makes the waveform of those frames exactly as the whole mel would.
// The flow's attention is full (non-causal), so mel frames settled early differ a little from the
// whole-sentence mel: docs/chatterbox-s3gen.md gives the measured difference.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

#include "chatterbox/hift_stream.h"
#include "chatterbox/s3gen.h"

namespace talkbox::chatterbox {

// What a render conditions the flow on. Whole (prompt_tokens 0): the voice's whole prompt and
// every token so far, as CosyVoice2's finalize=False streaming does; each render then costs a flow
// over the 10 s prompt and the whole prefix, again and again. Windowed: the last `prompt_tokens`
// of the voice's prompt with their mel, then the last `context_tokens` speech tokens already
// handed on with the mel settled for them (in-context, as the voice's prompt is), then the tokens
// still to settle: each render costs about the same, and the frames before the new ones are the
// ones the listener heard. The flow then sees less than the whole sentence, so its frames differ
// more from the whole-sentence mel (docs/chatterbox-s3gen.md measures both).
struct S3GenWindow {
    int prompt_tokens = 0;   // 0: the whole prompt and prefix (not windowed)
    int context_tokens = 0;  // settled speech tokens each windowed render repeats
};

class S3GenStream {
public:
    // Mel frames a render holds back: the last 3 tokens' frames, which have not seen their
    // look-ahead yet (finalize=False).
    static constexpr int64_t kHeldBackFrames = 3 * Flow::kTokenMelRatio;

    // noise: the whole sentence's draws in S3Gen::synthesize's layout (tests; they must cover the
    // final length), or empty: prefix-stable draws from `seed` (flow) and seed + 1 (HiFT), so that
    // every render gives the same frames the same draws. steps 0: the model's default.
    // first_steps: the ODE steps of the first render, which first audio waits on (0: `steps`); fewer
    // steps over the same time span and the same draws give a coarser solution of the same ODE.
    // `s3gen` must outlive the stream; others may use it between renders, never during one.
    S3GenStream(S3Gen& s3gen, const FlowPrompt& prompt, const S3GenNoise& noise, uint64_t seed, int steps = 0,
                const std::atomic<bool>* cancel = nullptr, S3GenWindow window = {}, int first_steps = 0);

    // tokens: every speech token of the sentence so far (< 6561). Runs the flow and returns the
    // waveform that is now settled (may be empty). final: these are all of the sentence's tokens
    // (Turbo: with its 3 silence tokens), and the rest of the waveform is returned.
    std::vector<float> render(const std::vector<int32_t>& tokens, bool final);

    // The draws the stream gives a sentence of `tokens` speech tokens, in S3Gen::synthesize's
    // layout: S3Gen::synthesize with them is the whole-sentence audio the stream approximates.
    S3GenNoise whole_noise(size_t tokens);

    int64_t emitted_samples() const { return hift_.emitted_samples(); }
    std::vector<float> mel() const { return hift_.mel(); }  // the mel frames settled so far, [80, frames]
    int renders() const { return renders_; }
    double flow_ms() const { return flow_ms_; }
    double hift_ms() const { return hift_.ms(); }

private:
    // A render's flow output: generated mel frames [80, frames] from generated frame `first` to
    // the end, which covers every frame from mel_sent_ on.
    struct FlowFrames {
        std::vector<float> mel;
        int64_t first;
    };
    // Over the whole prompt + tokens, or windowed (S3GenWindow); `tm`: the frames of prompt + tokens.
    FlowFrames whole_flow(const std::vector<int32_t>& tokens, int64_t tm, int steps);
    FlowFrames windowed_flow(const std::vector<int32_t>& tokens, int64_t tm, int steps);

    S3Gen& s3gen_;
    FlowPrompt prompt_;
    NoiseTape flow_noise_;  // rows = mel frames of prompt + speech, width 80
    HiftStream hift_;
    uint64_t seed_;
    int steps_, first_steps_;
    const std::atomic<bool>* cancel_;
    S3GenWindow window_;
    std::vector<float> sent_;  // the generated mel frames handed to HiFT, time-major (windowed renders)
    int64_t mel_sent_ = 0;     // generated mel frames handed to HiFT
    int renders_ = 0;
    double flow_ms_ = 0;
    bool finished_ = false;
};

}  // namespace talkbox::chatterbox
