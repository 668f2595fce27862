// Which files converting a repository needs (the family that recognises it says:
// checkpoints/converters.h), and fetching exactly those into a snapshot folder. Everything else is
// skipped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "convert/family_converter.h"
#include "hub/hub_api.h"
#include "talkbox/hub.h"

namespace talkbox::hub {

struct SnapshotDownload {
    size_t files_downloaded = 0;  // files fetched now (files already complete are skipped)
    uint64_t bytes_downloaded = 0;
};

// What to download (CheckpointFiles of convert/family_converter.h).
using SnapshotPlan = CheckpointFiles;

// Throws Error (NotFound) when the repository lacks a required file, (InvalidArgument) for a
// variant or checkpoint choice (ConvertOptions::checkpoint) that does not apply.
SnapshotPlan plan_snapshot(const RepoInfo& info, const std::string& repo_id, const std::string& variant,
                           const std::string& checkpoint = "");

// Downloads `plan`'s files; throws Error before downloading anything when the file tree lacks one.
SnapshotDownload download_snapshot(HubApi& api, const RepoInfo& info, const SnapshotPlan& plan, const std::string& dir,
                                   const std::function<void(const PullProgress&)>& progress);
// The same with the plan of the repository's default variant.
SnapshotDownload download_snapshot(HubApi& api, const RepoInfo& info, const std::string& dir,
                                   const std::function<void(const PullProgress&)>& progress);

}  // namespace talkbox::hub
