#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "talkbox/error.h"
#include "talkbox/watermark.h"
#include "watermark/perth.h"

namespace talkbox {

Watermarker::Watermarker(const std::string& path) : path_(path), perth_(std::make_unique<watermark::Perth>(path)) {}

Watermarker::~Watermarker() = default;

std::vector<float> Watermarker::embed(const std::vector<float>& pcm, int sample_rate) const { return perth_->embed(pcm, sample_rate); }

WatermarkDetection Watermarker::detect(const std::vector<float>& pcm, int sample_rate) const {
    return perth_->detect(pcm, sample_rate);
}

std::string Watermarker::default_path() {
    if (const char* path = std::getenv("TALKBOX_WATERMARK"); path && *path) return path;
    std::string home;
    if (const char* h = std::getenv("TALKBOX_HOME"); h && *h) {
        home = h;
    } else if (const char* h = std::getenv("HOME"); h && *h) {
        home = std::string(h) + "/.cache/talkbox";
    } else {
        throw Error(ErrorKind::InvalidArgument, "cannot place the watermark checkpoint: set TALKBOX_HOME (or HOME)");
    }
    return home + "/watermark/perth-implicit.gguf";
}

std::shared_ptr<const Watermarker> default_watermarker() {
    static std::mutex mutex;
    static bool tried = false;
    static std::shared_ptr<const Watermarker> loaded;
    std::lock_guard<std::mutex> lock(mutex);
    if (tried) return loaded;
    tried = true;
    std::string why;
    try {
        const std::string path = Watermarker::default_path();
        struct stat st{};
        if (stat(path.c_str(), &st) != 0) {
            why = "there is no watermark checkpoint at " + path;
        } else {
            loaded = std::make_shared<const Watermarker>(path);
        }
    } catch (const Error& e) {
        why = e.what();
    }
    if (!loaded) {
        std::fprintf(stderr,
                     "talkbox: WARNING: speech is NOT watermarked: %s. Fetch the Perth watermark with `talkbox pull "
                     "resemble-ai/Perth` (docs/watermark.md), or turn watermarking off with --no-watermark.\n",
                     why.c_str());
    }
    return loaded;
}

}  // namespace talkbox
