// Downloads one repository file into the cache. Bytes go to "<dest>.part"; an interrupted
// transfer resumes from it (HTTP Range), within this run while each attempt makes progress and
// in a later run from the .part left behind. The file is renamed into place only once its size
// and its hash (LFS files: sha256; files in git: the git blob id) match what the hub lists; a
// mismatching download is deleted.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "hub/hub_api.h"

namespace talkbox::hub {

// (bytes on disk, bytes in total, bytes per second of this run's transfer)
using DownloadProgress = std::function<void(uint64_t done, uint64_t total, double rate)>;

// Returns the number of bytes transferred (0 when a complete .part only needed checking).
uint64_t download_file(HubApi& api, const std::string& commit, const RepoFile& file, const std::string& dest,
                       const DownloadProgress& progress);

}  // namespace talkbox::hub
