// Which files converting a Qwen3-TTS checkpoint needs, and fetching exactly those into a snapshot
// folder: config.json, generation_config.json, the weights (model.safetensors, or the index and
// the shards it names), the tokenizer files and speech_tokenizer/. Everything else is skipped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "hub/hub_api.h"
#include "talkbox/hub.h"

namespace talkbox::hub {

struct SnapshotDownload {
    size_t files_downloaded = 0;  // files fetched now (files already complete are skipped)
    uint64_t bytes_downloaded = 0;
};

// Throws Error (NotFound) before downloading anything when the repository lacks a required file.
SnapshotDownload download_snapshot(HubApi& api, const RepoInfo& info, const std::string& dir,
                                   const std::function<void(const PullProgress&)>& progress);

}  // namespace talkbox::hub
