#include "hub/model_cache.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "talkbox/error.h"
#include "talkbox/hub.h"

namespace fs = std::filesystem;

namespace talkbox {

namespace hub {

namespace {

bool is_valid_part(const std::string& part) {
    if (part.empty()) return false;
    for (const char ch : part) {
        if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '-' && ch != '_' && ch != '.') return false;
    }
    const auto edge = [](char ch) { return ch == '-' || ch == '.'; };
    return !edge(part.front()) && !edge(part.back()) && part.find("--") == std::string::npos &&
           part.find("..") == std::string::npos;
}

const WeightType kAllTypes[] = {WeightType::F32, WeightType::F16, WeightType::BF16, WeightType::Q8_0, WeightType::Q4_K};

}  // namespace

bool is_valid_repo_id(const std::string& repo_id) {
    const size_t slash = repo_id.find('/');
    return repo_id.size() <= 96 && slash != std::string::npos && is_valid_part(repo_id.substr(0, slash)) &&
           is_valid_part(repo_id.substr(slash + 1));
}

void validate_repo_id(const std::string& repo_id) {
    if (!is_valid_repo_id(repo_id)) {
        throw Error(ErrorKind::InvalidArgument,
                    "invalid repository id '" + repo_id +
                        "': expected ORG/NAME such as Qwen/Qwen3-TTS-12Hz-0.6B-Base (letters, digits, '-', '_', '.'; "
                        "no '--' or '..'; at most 96 characters)");
    }
}

std::string repo_folder_name(const std::string& repo_id) {
    validate_repo_id(repo_id);
    const size_t slash = repo_id.find('/');
    return repo_id.substr(0, slash) + "--" + repo_id.substr(slash + 1);
}

std::string repo_dir(const std::string& cache_dir, const std::string& repo_id) {
    return cache_dir + "/hub/" + repo_folder_name(repo_id);
}

std::string snapshot_dir(const std::string& cache_dir, const std::string& repo_id, const std::string& commit) {
    return repo_dir(cache_dir, repo_id) + "/" + commit;
}

std::string models_dir(const std::string& cache_dir) { return cache_dir + "/models"; }

std::string model_file(const std::string& cache_dir, const std::string& repo_id, WeightType type) {
    return models_dir(cache_dir) + "/" + repo_folder_name(repo_id) + "-" + weight_type_name(type) + ".gguf";
}

}  // namespace hub

std::string default_cache_dir() {
    if (const char* home = std::getenv("TALKBOX_HOME"); home && *home) return home;
    if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/talkbox";
    throw Error(ErrorKind::InvalidArgument, "cannot place the model cache: set TALKBOX_HOME (or HOME)");
}

std::vector<CachedModel> list_cached_models(const std::string& cache_dir) {
    const std::string dir = hub::models_dir(cache_dir.empty() ? default_cache_dir() : cache_dir);
    std::vector<CachedModel> models;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return models;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string file = it->path().filename().string();
        if (!it->is_regular_file(ec) || file.size() < 5 || file.compare(file.size() - 5, 5, ".gguf") != 0) continue;
        const std::string stem = file.substr(0, file.size() - 5);
        // "<org>--<name>-<type>": the type is a known suffix; org never contains "--".
        for (const WeightType type : hub::kAllTypes) {
            const std::string suffix = std::string("-") + weight_type_name(type);
            const size_t split = stem.find("--");
            if (stem.size() <= suffix.size() || stem.compare(stem.size() - suffix.size(), suffix.size(), suffix) != 0 ||
                split == std::string::npos) {
                continue;
            }
            const std::string name = stem.substr(0, stem.size() - suffix.size());
            const std::string repo_id = name.substr(0, split) + "/" + name.substr(split + 2);
            if (!hub::is_valid_repo_id(repo_id)) continue;
            models.push_back({repo_id, type, it->path().string(), static_cast<uint64_t>(it->file_size(ec))});
            break;
        }
    }
    if (ec) throw Error(ErrorKind::Io, "cannot list '" + dir + "': " + ec.message());
    std::sort(models.begin(), models.end(), [](const CachedModel& a, const CachedModel& b) {
        return a.repo_id != b.repo_id ? a.repo_id < b.repo_id : a.type < b.type;
    });
    return models;
}

std::string resolve_model(const std::string& name_or_path, std::optional<WeightType> type, const std::string& cache_dir) {
    std::error_code ec;
    if (fs::is_regular_file(name_or_path, ec)) return name_or_path;
    if (fs::is_directory(name_or_path, ec)) {
        throw Error(ErrorKind::InvalidArgument, "'" + name_or_path + "' is a folder, not a model file; convert it with "
                                                "`talkbox convert " + name_or_path + " -o model.gguf`");
    }
    const bool gguf_name = name_or_path.size() >= 5 && name_or_path.compare(name_or_path.size() - 5, 5, ".gguf") == 0;
    if (gguf_name || !hub::is_valid_repo_id(name_or_path)) {
        throw Error(ErrorKind::NotFound, "model file '" + name_or_path + "' does not exist (nor is it a hub name "
                                         "like Qwen/Qwen3-TTS-12Hz-0.6B-Base)");
    }
    const std::string cache = cache_dir.empty() ? default_cache_dir() : cache_dir;
    // The requested type first, then pull's default (f16), then the rest from the best quality down.
    std::vector<WeightType> order;
    if (type) order.push_back(*type);
    order.push_back(WeightType::F16);
    for (const WeightType t : hub::kAllTypes) order.push_back(t);
    for (const WeightType t : order) {
        const std::string path = hub::model_file(cache, name_or_path, t);
        if (fs::is_regular_file(path, ec)) return path;
    }
    throw Error(ErrorKind::NotFound, "model '" + name_or_path + "' is not in the cache (" + hub::models_dir(cache) +
                                         "): run `talkbox pull " + name_or_path +
                                         (type ? std::string(" --type ") + weight_type_name(*type) : "") + "` first");
}

}  // namespace talkbox
