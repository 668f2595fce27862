// JSON files with errors that name the file and the position.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace talkbox {

// The deepest nesting of arrays and objects accepted from outside. Real documents stay far below
// (tokenizer.json 5 levels, config.json 4); nlohmann's copy, dump and comparison recurse once per
// level, so an unbounded depth would overflow the stack.
constexpr int kMaxJsonDepth = 64;

// Parses JSON read from outside (files, request bodies, headers), refusing nesting deeper than
// max_depth before anything is built. Throws Error (Format) "<what>: malformed JSON at byte K: ..."
// or "<what>: JSON nested deeper than N levels at byte K"; bytes count from 1, as nlohmann's do.
nlohmann::json parse_json_text(std::string_view text, const std::string& what, int max_depth = kMaxJsonDepth);

// Parses a whole JSON file through parse_json_text; throws Error (NotFound/Io/Format).
nlohmann::json read_json_file(const std::string& path);

// `v` as JSON text for an error message, cut to about 60 bytes: crafted values may be megabytes.
std::string json_excerpt(const nlohmann::json& v);

// Typed access to a member of a JSON object; `where` names the object in messages
// (e.g. "config.json: talker_config"). Missing members and wrong types throw Error (Format).
const nlohmann::json& json_member(const nlohmann::json& obj, const std::string& key, const std::string& where);
std::string json_string(const nlohmann::json& obj, const std::string& key, const std::string& where);

}  // namespace talkbox
