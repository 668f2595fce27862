// Models from the Hugging Face hub: `talkbox pull` downloads a Qwen3-TTS or Chatterbox checkpoint
// into the local cache and converts it to GGUF; `talkbox list` shows the cache; resolve_model()
// lets every command take "-m Qwen/Qwen3-TTS-12Hz-0.6B-Base" (or "ResembleAI/chatterbox@english",
// a variant pulled with --variant) instead of a file path; `talkbox default` picks the model that
// commands without -m use (default_model()).
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
    std::string repo_id;            // "Qwen/Qwen3-TTS-12Hz-0.6B-Base", "ResembleAI/chatterbox"
    std::string revision = "main";  // branch, tag or commit
    // Chatterbox repositories: "multilingual", "english", "turbo" or "nano" (which official loader's
    // files to download and convert); empty: the repository's default (ResembleAI/chatterbox:
    // multilingual, ResembleAI/chatterbox-turbo: turbo, ResembleAI/chatterbox-nano: nano).
    std::string variant;
    // Which checkpoint of the variant, as `convert --t3-model` (ConvertOptions::checkpoint): for
    // Chatterbox multilingual "v2" (the default) or "v3"; a non-default one is cached as a model of
    // its own, ORG/NAME@multilingual_v3. Empty: the default.
    std::string checkpoint;
    WeightType type = WeightType::F16;
    std::string cache_dir;          // empty: default_cache_dir()
    std::string endpoint;           // empty: $HF_ENDPOINT, else https://huggingface.co
    std::string token;              // empty: $HF_TOKEN (unset is fine for public repositories)
    long stall_timeout_s = 30;      // a connection or transfer that receives nothing for this long fails
    std::function<void(const PullProgress&)> progress;
};

struct PullResult {
    std::string model_path;  // <cache>/models/<org>--<name>[@<variant>]-<type>.gguf
    std::string model_name;  // what -m takes: ORG/NAME, or ORG/NAME@VARIANT for a variant other than the default
    std::string commit;      // the snapshot's commit on the hub
    size_t files_downloaded = 0;
    uint64_t bytes_downloaded = 0;
    bool up_to_date = false;  // the cached model was already converted from this commit: nothing done
};

// Lists the repository through the hub API, downloads only the files conversion needs into
// <cache>/hub/<org>--<name>/<commit>/ (resuming ".part" files, checking sizes and LFS sha256),
// then converts them. Throws Error with what went wrong and what to do about it (e.g. set HF_TOKEN).
PullResult pull_model(const PullOptions& options);

// The Perth watermark's checkpoint (`talkbox pull resemble-ai/Perth`, docs/watermark.md): the
// released perth_net_250000.pth.tar from GitHub at the pinned commit ($TALKBOX_PERTH_URL replaces
// the URL, for mirrors and tests), accepted only when its git blob id is the pinned one, converted
// to `dest` (empty: Watermarker::default_path()). Nothing is fetched when `dest` already holds it.
struct WatermarkPullResult {
    std::string path;
    std::string url;        // where it came from
    uint64_t bytes = 0;     // downloaded (0 when up to date)
    bool up_to_date = false;
};
WatermarkPullResult pull_watermark(const std::string& dest = "", long stall_timeout_s = 30);

struct CachedModel {
    std::string repo_id;
    WeightType type;
    std::string path;
    uint64_t bytes = 0;
    std::string variant;  // empty: the repository's default variant
    std::string name;     // what -m takes: repo_id, or repo_id@variant
};

// Converted models in <cache>/models, sorted by name then type. cache_dir empty: the default.
std::vector<CachedModel> list_cached_models(const std::string& cache_dir = "");

// An existing file path as is; otherwise the cached model of that name (ORG/NAME, or
// ORG/NAME@VARIANT): `type` when cached, else f16, else any type (f32 first). Throws Error
// (NotFound) telling the user which `talkbox pull` to run when nothing is cached.
std::string resolve_model(const std::string& name_or_path, std::optional<WeightType> type = std::nullopt,
                          const std::string& cache_dir = "");

// The model commands use without -m, by precedence: $TALKBOX_MODEL (this shell), then the choice
// of `talkbox default` (stored in <cache>/default_model), then the only model in the cache.
struct DefaultModel {
    enum class Source { Environment, Setting, OnlyCached };
    std::string model;  // a file path or a cached model's name, as given
    Source source = Source::OnlyCached;
    std::string setting_file;  // <cache>/default_model
    std::string describe() const;  // "from $TALKBOX_MODEL", "set by `talkbox default` in ...", ...
};

// Throws Error (NotFound) when there is none, saying which `talkbox pull` command to run, or, with
// several models cached and no choice made, listing them and how to choose.
DefaultModel default_model(const std::string& cache_dir = "");
// name_or_path must resolve (resolve_model); a file path is stored absolute. Returns what was stored.
std::string set_default_model(const std::string& name_or_path, const std::string& cache_dir = "");
bool clear_default_model(const std::string& cache_dir = "");  // false when none was set

// resolve_model(-m) when given, else the default model's file.
std::string resolve_model_or_default(const std::string& name_or_path);

}  // namespace talkbox
