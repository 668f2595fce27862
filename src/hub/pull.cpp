// pull_model(): hub snapshot (Qwen3-TTS or Chatterbox) → cached GGUF, skipping all work when the
// cached model already came from the commit the revision points at.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/file.h>
#include <system_error>
#include <unistd.h>

#include "core/gguf_file.h"
#include "hub/hub_api.h"
#include "hub/model_cache.h"
#include "hub/snapshot.h"
#include "talkbox/error.h"
#include "talkbox/hub.h"

namespace fs = std::filesystem;

namespace talkbox {

namespace {

std::string env_or(const char* name, const std::string& fallback) {
    const char* v = std::getenv(name);
    return v && *v ? v : fallback;
}

// An exclusive lock on a repository's cache folder, so two pulls never write the same .part file.
class RepoLock {
public:
    RepoLock(const std::string& path, const std::string& repo_id) {
        fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd_ < 0) throw Error(ErrorKind::Io, "cannot open '" + path + "': " + std::strerror(errno));
        if (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
            ::close(fd_);
            throw Error(ErrorKind::Io, "another `talkbox pull " + repo_id + "` is running (it holds " + path + ")");
        }
    }
    ~RepoLock() { ::close(fd_); }
    RepoLock(const RepoLock&) = delete;
    RepoLock& operator=(const RepoLock&) = delete;

private:
    int fd_ = -1;
};

bool converted_from(const std::string& model, const std::string& source_url) {
    std::error_code ec;
    if (!fs::is_regular_file(model, ec)) return false;
    try {
        const GgufFile file(model);
        return file.meta().has_key("general.source.url") && file.meta().get_string("general.source.url") == source_url;
    } catch (const Error&) {
        return false;  // unreadable: convert again
    }
}

}  // namespace

PullResult pull_model(const PullOptions& opt) {
    hub::validate_repo_id(opt.repo_id);
    if (opt.stall_timeout_s <= 0) throw Error(ErrorKind::InvalidArgument, "the stall timeout must be positive");
    const std::string cache = opt.cache_dir.empty() ? default_cache_dir() : opt.cache_dir;
    hub::HttpClient http({opt.token.empty() ? env_or("HF_TOKEN", "") : opt.token, opt.stall_timeout_s});
    hub::HubApi api(http, opt.endpoint.empty() ? env_or("HF_ENDPOINT", "https://huggingface.co") : opt.endpoint,
                    opt.repo_id);

    const std::string repo_dir = hub::repo_dir(cache, opt.repo_id);
    std::error_code ec;
    fs::create_directories(repo_dir, ec);
    if (!ec) fs::create_directories(hub::models_dir(cache), ec);
    if (ec) throw Error(ErrorKind::Io, "cannot create the model cache in '" + cache + "': " + ec.message());
    const RepoLock lock(repo_dir + "/.lock", opt.repo_id);

    const hub::RepoInfo info = api.info(opt.revision);
    PullResult result;
    result.commit = info.commit;
    const hub::SnapshotPlan plan = hub::plan_snapshot(info, opt.repo_id, opt.variant, opt.checkpoint);
    // The default variant keeps the plain name, so that `-m ORG/NAME` is what was pulled without
    // --variant; another checkpoint of a variant is a model of its own (ORG/NAME@multilingual_v3).
    const std::string variant = !plan.checkpoint_name.empty() ? plan.variant + "_" + plan.checkpoint_name
                                : plan.default_variant        ? ""
                                                              : plan.variant;
    result.model_path = hub::model_file(cache, opt.repo_id, opt.type, variant);
    result.model_name = hub::model_name(opt.repo_id, variant);
    const std::string source_url = api.endpoint() + "/" + opt.repo_id + "/tree/" + info.commit;
    if (converted_from(result.model_path, source_url)) {
        result.up_to_date = true;
        return result;
    }

    const std::string dir = hub::snapshot_dir(cache, opt.repo_id, info.commit);
    const hub::SnapshotDownload download = hub::download_snapshot(api, info, plan, dir, opt.progress);
    result.files_downloaded = download.files_downloaded;
    result.bytes_downloaded = download.bytes_downloaded;
    if (!plan.companion_files.empty()) {
        // Files the checkpoint's loader reads from another repository, at that repository's head.
        hub::HubApi companion(http, api.endpoint(), plan.companion_repo);
        const hub::RepoInfo companion_info = companion.info("main");
        hub::SnapshotPlan part;
        part.files = plan.companion_files;
        for (const auto& file : part.files) {
            if (std::find(companion_info.files.begin(), companion_info.files.end(), file) == companion_info.files.end()) {
                throw Error(ErrorKind::NotFound, opt.repo_id + " takes " + file + " from " + plan.companion_repo +
                                                     ", whose commit " + companion_info.commit.substr(0, 12) + " lacks it");
            }
        }
        const hub::SnapshotDownload more = hub::download_snapshot(companion, companion_info, part, dir, opt.progress);
        result.files_downloaded += more.files_downloaded;
        result.bytes_downloaded += more.bytes_downloaded;
    }

    ConvertOptions convert;
    convert.snapshot_dir = dir;
    convert.output_path = result.model_path;
    convert.type = opt.type;
    convert.name = result.model_name.substr(opt.repo_id.find('/') + 1);
    convert.variant = plan.variant;
    convert.checkpoint = opt.checkpoint;
    convert.source_url = source_url;
    if (opt.progress) {
        convert.progress = [&opt](size_t done, size_t total, const std::string& tensor) {
            PullProgress p;
            p.stage = PullProgress::Stage::Convert;
            p.item = tensor;
            p.done = done;
            p.total = total;
            opt.progress(p);
        };
    }
    convert_snapshot(convert);
    return result;
}

}  // namespace talkbox
