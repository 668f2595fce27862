#include "hub/snapshot.h"

#include <filesystem>
#include <set>
#include <system_error>
#include <vector>

#include "checkpoints/converters.h"
#include "core/json_file.h"
#include "hub/download.h"
#include "talkbox/error.h"

namespace fs = std::filesystem;

namespace talkbox::hub {

namespace {

// The shard files model.safetensors.index.json names, each a plain file name the repository has.
std::vector<std::string> shard_names(const std::string& index_path, const std::set<std::string>& listed) {
    const auto index = read_json_file(index_path);
    const auto& map = json_member(index, "weight_map", index_path);
    if (!map.is_object() || map.empty()) throw Error(ErrorKind::Format, index_path + ": weight_map must be a non-empty object");
    std::set<std::string> shards;
    for (const auto& [tensor, shard] : map.items()) {
        if (!shard.is_string()) throw Error(ErrorKind::Format, index_path + ": shard of '" + tensor + "' is not a string");
        const std::string name = shard.get<std::string>();
        if (!is_safe_repo_path(name) || name.find('/') != std::string::npos) {
            throw Error(ErrorKind::Format, index_path + ": shard name " + nlohmann::json(name).dump() +
                                               " must be a plain file name");
        }
        if (!listed.count(name)) {
            throw Error(ErrorKind::NotFound, index_path + ": shard '" + name + "' is not in the repository");
        }
        shards.insert(name);
    }
    return {shards.begin(), shards.end()};
}

}  // namespace

SnapshotPlan plan_snapshot(const RepoInfo& info, const std::string& repo_id, const std::string& variant,
                           const std::string& checkpoint) {
    const std::set<std::string> listed(info.files.begin(), info.files.end());
    const FileSet files{[&listed](const std::string& name) { return listed.count(name) > 0; },
                        [](const std::string& name) { return name; },
                        "repository '" + repo_id + "' at commit " + info.commit.substr(0, 12),
                        [&listed] {
                            std::vector<std::string> top;
                            for (const auto& name : listed) {
                                if (name.find('/') == std::string::npos) top.push_back(name);
                            }
                            return top;
                        }};
    return converter_for(files).files(files, variant, checkpoint);
}

SnapshotDownload download_snapshot(HubApi& api, const RepoInfo& info, const std::string& dir,
                                   const std::function<void(const PullProgress&)>& progress) {
    return download_snapshot(api, info, plan_snapshot(info, api.repo_id(), ""), dir, progress);
}

SnapshotDownload download_snapshot(HubApi& api, const RepoInfo& info, const SnapshotPlan& plan, const std::string& dir,
                                   const std::function<void(const PullProgress&)>& progress) {
    const std::set<std::string> listed(info.files.begin(), info.files.end());
    const std::string where = "repository '" + api.repo_id() + "' at commit " + info.commit.substr(0, 12);
    std::vector<std::string> files = plan.files;
    const bool sharded = plan.expand_index;
    const auto tree = api.tree(info.commit);
    SnapshotDownload result;
    for (size_t i = 0; i < files.size(); ++i) {
        const auto entry = tree.find(files[i]);
        if (entry == tree.end()) {
            throw Error(ErrorKind::Format, where + ": the hub lists " + files[i] + " but its file tree does not");
        }
        const std::string dest = dir + "/" + files[i];
        std::error_code ec;
        // A file in place was checked before it was renamed there.
        if (!fs::is_regular_file(dest, ec) || fs::file_size(dest, ec) != entry->second.size) {
            const auto report = [&](uint64_t done, uint64_t total, double rate) {
                if (!progress) return;
                PullProgress p;
                p.stage = PullProgress::Stage::Download;
                p.item = files[i];
                p.index = i + 1;
                p.count = files.size();
                p.done = done;
                p.total = total;
                p.bytes_per_second = rate;
                progress(p);
            };
            result.bytes_downloaded += download_file(api, info.commit, entry->second, dest, report);
            ++result.files_downloaded;
        }
        if (sharded && i == 0) {
            for (const auto& shard : shard_names(dest, listed)) files.push_back(shard);
        }
    }
    return result;
}

}  // namespace talkbox::hub
