// The local model cache: where `pull` puts snapshots and converted models, and how a hub name
// maps to folder and file names. Repository ids are validated here so no name escapes the cache.
//
//   <cache>/hub/<org>--<name>/<commit>/...        downloaded snapshot files (".part" while in progress)
//   <cache>/models/<org>--<name>-<type>.gguf      converted models
#pragma once

#include <string>

#include "talkbox/convert.h"

namespace talkbox::hub {

// ORG/NAME with the hub's rules: letters, digits, '-', '_', '.'; no "--" or ".."; neither part
// starts or ends with '-' or '.'; at most 96 characters. The rules make "<org>--<name>" unambiguous.
bool is_valid_repo_id(const std::string& repo_id);
void validate_repo_id(const std::string& repo_id);  // throws Error (InvalidArgument) with the rules

std::string repo_folder_name(const std::string& repo_id);  // "Qwen/X" → "Qwen--X"
std::string repo_dir(const std::string& cache_dir, const std::string& repo_id);
std::string snapshot_dir(const std::string& cache_dir, const std::string& repo_id, const std::string& commit);
std::string models_dir(const std::string& cache_dir);
std::string model_file(const std::string& cache_dir, const std::string& repo_id, WeightType type);

}  // namespace talkbox::hub
