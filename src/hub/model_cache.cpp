#include "hub/model_cache.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "core/atomic_file.h"
#include "core/strings.h"
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

bool is_valid_variant(const std::string& variant) {
    if (variant.empty() || variant.size() > 32) return false;
    for (const char ch : variant) {
        if (!std::islower(static_cast<unsigned char>(ch)) && !std::isdigit(static_cast<unsigned char>(ch)) && ch != '_') return false;
    }
    return true;
}

std::string model_file(const std::string& cache_dir, const std::string& repo_id, WeightType type, const std::string& variant) {
    if (!variant.empty() && !is_valid_variant(variant)) {
        throw Error(ErrorKind::InvalidArgument, "invalid variant '" + variant + "': expected lower-case letters, digits and '_'");
    }
    return models_dir(cache_dir) + "/" + repo_folder_name(repo_id) + (variant.empty() ? "" : "@" + variant) + "-" +
           weight_type_name(type) + ".gguf";
}

std::optional<std::pair<std::string, std::string>> split_model_name(const std::string& name) {
    const size_t at = name.find('@');
    const std::string repo = name.substr(0, at), variant = at == std::string::npos ? "" : name.substr(at + 1);
    if (!is_valid_repo_id(repo) || (at != std::string::npos && !is_valid_variant(variant))) return std::nullopt;
    return std::make_pair(repo, variant);
}

std::string model_name(const std::string& repo_id, const std::string& variant) {
    return variant.empty() ? repo_id : repo_id + "@" + variant;
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
            const auto parts = hub::split_model_name(name.substr(0, split) + "/" + name.substr(split + 2));
            if (!parts) continue;
            models.push_back({parts->first, type, it->path().string(), static_cast<uint64_t>(it->file_size(ec)), parts->second,
                              hub::model_name(parts->first, parts->second)});
            break;
        }
    }
    if (ec) throw Error(ErrorKind::Io, "cannot list '" + dir + "': " + ec.message());
    std::sort(models.begin(), models.end(), [](const CachedModel& a, const CachedModel& b) {
        return a.name != b.name ? a.name < b.name : a.type < b.type;
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
    const auto parts = hub::split_model_name(name_or_path);
    if (gguf_name || !parts) {
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
        const std::string path = hub::model_file(cache, parts->first, t, parts->second);
        if (fs::is_regular_file(path, ec)) return path;
    }
    throw Error(ErrorKind::NotFound, "model '" + name_or_path + "' is not in the cache (" + hub::models_dir(cache) +
                                         "): run `talkbox pull " + parts->first +
                                         (parts->second.empty() ? "" : " --variant " + parts->second) +
                                         (type ? std::string(" --type ") + weight_type_name(*type) : "") + "` first");
}

}  // namespace talkbox

namespace talkbox {

namespace {

// The model to suggest when the cache is empty: Chatterbox speaks with its built-in voice, so
// `talkbox speak -t "Hello"` works right after this pull.
constexpr const char* kFirstModel = "ResembleAI/chatterbox";

std::string setting_file(const std::string& cache) { return cache + "/default_model"; }

}  // namespace

std::string DefaultModel::describe() const {
    switch (source) {
        case Source::Environment: return "from $TALKBOX_MODEL";
        case Source::Setting: return "set by `talkbox default`, stored in " + setting_file;
        case Source::OnlyCached: return "the only model in the cache";
    }
    return "";
}

DefaultModel default_model(const std::string& cache_dir) {
    DefaultModel d;
    if (const char* env = std::getenv("TALKBOX_MODEL"); env && *env) {
        d.model = env;
        d.source = DefaultModel::Source::Environment;
        return d;
    }
    const std::string cache = cache_dir.empty() ? default_cache_dir() : cache_dir;
    d.setting_file = setting_file(cache);
    std::error_code ec;
    if (fs::is_regular_file(d.setting_file, ec)) {
        std::ifstream in(d.setting_file, std::ios::binary);
        std::ostringstream text;
        text << in.rdbuf();
        if (!in) throw Error(ErrorKind::Io, "cannot read the default model from '" + d.setting_file + "'");
        d.model = trim(text.str());
        if (d.model.empty() || d.model.find('\n') != std::string::npos) {
            throw Error(ErrorKind::Format, "'" + d.setting_file + "' should hold one model name or path: set it again with "
                                           "`talkbox default MODEL`");
        }
        d.source = DefaultModel::Source::Setting;
        return d;
    }
    const auto models = list_cached_models(cache);
    std::vector<std::string> names;
    for (const auto& m : models) {
        if (names.empty() || names.back() != m.name) names.push_back(m.name);
    }
    if (names.size() == 1) {
        d.model = names[0];
        d.source = DefaultModel::Source::OnlyCached;
        return d;
    }
    if (names.empty()) {
        throw Error(ErrorKind::NotFound, "no model given (-m) and none in the cache (" + hub::models_dir(cache) +
                                             "): run `talkbox pull " + kFirstModel + "` first (or give -m model.gguf)");
    }
    std::string list;
    for (const auto& n : names) list += "\n  " + n;
    throw Error(ErrorKind::InvalidArgument, "no model given (-m) and " + std::to_string(names.size()) +
                                                " models in the cache, none of them the default:" + list +
                                                "\nchoose one with `talkbox default " + names[0] + "` (or -m NAME, or $TALKBOX_MODEL)");
}

std::string set_default_model(const std::string& name_or_path, const std::string& cache_dir) {
    const std::string cache = cache_dir.empty() ? default_cache_dir() : cache_dir;
    resolve_model(name_or_path, std::nullopt, cache);  // a name that does not resolve is refused now, not at the next speak
    std::error_code ec;
    const std::string stored = fs::is_regular_file(name_or_path, ec) ? fs::absolute(name_or_path).lexically_normal().string()
                                                                    : name_or_path;
    fs::create_directories(cache, ec);
    if (ec) throw Error(ErrorKind::Io, "cannot create the model cache in '" + cache + "': " + ec.message());
    AtomicFileWriter out(setting_file(cache));
    const std::string line = stored + "\n";
    out.write(line.data(), line.size());
    out.commit();
    return stored;
}

bool clear_default_model(const std::string& cache_dir) {
    const std::string cache = cache_dir.empty() ? default_cache_dir() : cache_dir;
    std::error_code ec;
    const bool removed = fs::remove(setting_file(cache), ec);
    if (ec) throw Error(ErrorKind::Io, "cannot remove '" + setting_file(cache) + "': " + ec.message());
    return removed;
}

std::string resolve_model_or_default(const std::string& name_or_path) {
    if (!name_or_path.empty()) return resolve_model(name_or_path);
    const DefaultModel d = default_model();
    try {
        return resolve_model(d.model);
    } catch (const Error& e) {
        throw Error(e.kind(), "the default model '" + d.model + "' (" + d.describe() + "): " + e.what());
    }
}

}  // namespace talkbox
