// Which files converting a repository needs, and fetching exactly those into a snapshot folder.
// Qwen3-TTS: config.json, generation_config.json, the weights (model.safetensors, or the index and
// the shards it names), the tokenizer files and speech_tokenizer/. Chatterbox (no config.json, a T3
// or S3Gen checkpoint): the files convert reads for the chosen variant (convert/chatterbox_convert.h).
// Everything else is skipped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hub/hub_api.h"
#include "talkbox/hub.h"

namespace talkbox::hub {

struct SnapshotDownload {
    size_t files_downloaded = 0;  // files fetched now (files already complete are skipped)
    uint64_t bytes_downloaded = 0;
};

struct SnapshotPlan {
    std::vector<std::string> files;  // in download order
    bool expand_index = false;       // files[0] is model.safetensors.index.json: the shards it names follow
    std::string variant;             // Chatterbox: the variant the files convert to; empty for Qwen3-TTS
    bool default_variant = true;     // the variant the repository converts to when none is asked for
};

// Throws Error (NotFound) when the repository lacks a required file, (InvalidArgument) for a
// variant that does not apply.
SnapshotPlan plan_snapshot(const RepoInfo& info, const std::string& repo_id, const std::string& variant);

// Downloads `plan`'s files; throws Error before downloading anything when the file tree lacks one.
SnapshotDownload download_snapshot(HubApi& api, const RepoInfo& info, const SnapshotPlan& plan, const std::string& dir,
                                   const std::function<void(const PullProgress&)>& progress);
// The same with the plan of the repository's default variant.
SnapshotDownload download_snapshot(HubApi& api, const RepoInfo& info, const std::string& dir,
                                   const std::function<void(const PullProgress&)>& progress);

}  // namespace talkbox::hub
