// The Perth implicit watermark (Resemble AI's resemble-ai/Perth): an inaudible mark that the
// official Chatterbox package puts on all the speech it makes. talkbox marks Chatterbox speech the
// same way by default and Qwen3-TTS speech when asked, and reads the mark back from any clip. The
// weights are a separate download (`talkbox pull resemble-ai/Perth`); without them nothing is
// marked, and default_watermarker() says so once. See docs/watermark.md.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace talkbox {

namespace watermark {
class Perth;
}

struct WatermarkDetection {
    // False when the clip has no frame loud enough to read (silence): no verdict either way.
    bool readable = false;
    double raw = 0;         // the detector's output, about 1 for marked audio and 0 for clean audio
    double confidence = 0;  // raw clipped to [0, 1], as the official get_watermark(round=False)
    bool detected = false;  // confidence > 0.5: the official rounded verdict is 1
};

class Watermarker {
public:
    // A converted Perth checkpoint (the GGUF `talkbox pull resemble-ai/Perth` makes); throws Error.
    explicit Watermarker(const std::string& path);
    ~Watermarker();
    Watermarker(const Watermarker&) = delete;
    Watermarker& operator=(const Watermarker&) = delete;

    const std::string& path() const { return path_; }

    // The official apply_watermark: mono PCM at any rate in, marked PCM at the same rate out, up to
    // 10 ms shorter (the official iSTFT keeps whole 10 ms hops). Throws Error (InvalidArgument) for
    // a clip shorter than about 33 ms.
    std::vector<float> embed(const std::vector<float>& pcm, int sample_rate) const;
    // The official get_watermark; throws Error (InvalidArgument) as embed does.
    WatermarkDetection detect(const std::vector<float>& pcm, int sample_rate) const;

    // Where `talkbox pull resemble-ai/Perth` puts the checkpoint: $TALKBOX_WATERMARK when set, else
    // $TALKBOX_HOME/watermark/perth-implicit.gguf (TALKBOX_HOME defaults to ~/.cache/talkbox).
    static std::string default_path();

private:
    std::string path_;
    std::unique_ptr<watermark::Perth> perth_;
};

// The watermarker at default_path(), loaded once per process and shared. When the file is absent
// (or does not load), returns nullptr and prints one warning to stderr, the first time only, that
// speech will not carry the watermark and how to get it; the caller goes on unmarked.
std::shared_ptr<const Watermarker> default_watermarker();

}  // namespace talkbox
