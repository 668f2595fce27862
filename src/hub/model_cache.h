// The local model cache: where `pull` puts snapshots and converted models, and how a hub name
// maps to folder and file names. Repository ids are validated here so no name escapes the cache.
//
//   <cache>/hub/<org>--<name>/<commit>/...        downloaded snapshot files (".part" while in progress)
//   <cache>/models/<org>--<name>-<type>.gguf      converted models (the repository's default variant)
//   <cache>/models/<org>--<name>@<variant>-<type>.gguf   another variant (pull --variant), named ORG/NAME@VARIANT
//   <cache>/default_model                         the model `talkbox default` chose
#pragma once

#include <optional>
#include <string>
#include <utility>

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
bool is_valid_variant(const std::string& variant);  // lower-case letters, digits and '_', 1 to 32

// `variant` empty: the repository's default variant; else lower-case letters, digits and '_'.
std::string model_file(const std::string& cache_dir, const std::string& repo_id, WeightType type,
                       const std::string& variant = "");

// "ORG/NAME" or "ORG/NAME@VARIANT" → (repository id, variant); nullopt when it is neither.
std::optional<std::pair<std::string, std::string>> split_model_name(const std::string& name);
std::string model_name(const std::string& repo_id, const std::string& variant);  // the inverse

}  // namespace talkbox::hub
