// JSON files with errors that name the file and the position.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace talkbox {

// Parses a whole JSON file; throws Error (NotFound/Io/Format).
nlohmann::json read_json_file(const std::string& path);

// Typed access to a member of a JSON object; `where` names the object in messages
// (e.g. "config.json: talker_config"). Missing members and wrong types throw Error (Format).
const nlohmann::json& json_member(const nlohmann::json& obj, const std::string& key, const std::string& where);
int64_t json_int(const nlohmann::json& obj, const std::string& key, const std::string& where);
double json_number(const nlohmann::json& obj, const std::string& key, const std::string& where);
bool json_bool(const nlohmann::json& obj, const std::string& key, const std::string& where);
std::string json_string(const nlohmann::json& obj, const std::string& key, const std::string& where);

}  // namespace talkbox
