// Models from the Hugging Face hub: `talkbox pull` downloads a Qwen3-TTS snapshot into the local
// cache and converts it to GGUF; `talkbox list` shows the cache; resolve_model() lets every
// command take "-m Qwen/Qwen3-TTS-12Hz-0.6B-Base" instead of a file path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "talkbox/convert.h"

namespace talkbox {

// $TALKBOX_HOME, else ~/.cache/talkbox. Throws Error (InvalidArgument) when neither is set.
std::string default_cache_dir();

struct PullProgress {
    enum class Stage { Download, Convert };
    Stage stage = Stage::Download;
    std::string item;          // the repository file being downloaded, or the GGUF tensor just written
    size_t index = 0;          // 1-based number of that file (download) among `count`
    size_t count = 0;
    uint64_t done = 0;         // bytes of the file (download) or tensors written (convert)
    uint64_t total = 0;
    double bytes_per_second = 0;  // download rate of the current transfer
};

struct PullOptions {
    std::string repo_id;            // "Qwen/Qwen3-TTS-12Hz-0.6B-Base"
    std::string revision = "main";  // branch, tag or commit
    WeightType type = WeightType::F16;
    std::string cache_dir;          // empty: default_cache_dir()
    std::string endpoint;           // empty: $HF_ENDPOINT, else https://huggingface.co
    std::string token;              // empty: $HF_TOKEN (unset is fine for public repositories)
    long stall_timeout_s = 30;      // a connection or transfer that receives nothing for this long fails
    std::function<void(const PullProgress&)> progress;
};

struct PullResult {
    std::string model_path;  // <cache>/models/<org>--<name>-<type>.gguf
    std::string commit;      // the snapshot's commit on the hub
    size_t files_downloaded = 0;
    uint64_t bytes_downloaded = 0;
    bool up_to_date = false;  // the cached model was already converted from this commit: nothing done
};

// Lists the repository through the hub API, downloads only the files conversion needs into
// <cache>/hub/<org>--<name>/<commit>/ (resuming ".part" files, checking sizes and LFS sha256),
// then converts them. Throws Error with what went wrong and what to do about it (e.g. set HF_TOKEN).
PullResult pull_model(const PullOptions& options);

struct CachedModel {
    std::string repo_id;
    WeightType type;
    std::string path;
    uint64_t bytes = 0;
};

// Converted models in <cache>/models, sorted by repository id then type. cache_dir empty: the default.
std::vector<CachedModel> list_cached_models(const std::string& cache_dir = "");

// An existing file path as is; otherwise the cached model of that hub repository: `type` when
// cached, else f16, else any type (f32 first). Throws Error (NotFound) telling the user to run
// `talkbox pull NAME` when nothing is cached.
std::string resolve_model(const std::string& name_or_path, std::optional<WeightType> type = std::nullopt,
                          const std::string& cache_dir = "");

}  // namespace talkbox
