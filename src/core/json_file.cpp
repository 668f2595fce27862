#include "core/json_file.h"

#include "core/mapped_file.h"
#include "talkbox/error.h"

namespace talkbox {

namespace {

// The 1-based byte of the first bracket nested deeper than max_depth, or 0. Within the longest valid
// prefix of the text (all the parser would build) this counts exactly the parser's nesting; past it
// the parser fails anyway.
size_t too_deep_at(std::string_view text, int max_depth) {
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\') ++i;  // the escaped character cannot end the string
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth) return i + 1;
        } else if (c == ']' || c == '}') {
            --depth;
        }
    }
    return 0;
}

// `text` cut to about `max` bytes for a message, never inside a UTF-8 character.
std::string cut(const std::string& text, size_t max) {
    if (text.size() <= max) return text;
    size_t at = max;
    while (at > 0 && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) --at;
    return text.substr(0, at) + "... (" + std::to_string(text.size()) + " bytes)";
}

}  // namespace

nlohmann::json parse_json_text(std::string_view text, const std::string& what, int max_depth) {
    if (const size_t at = too_deep_at(text, max_depth)) {
        throw Error(ErrorKind::Format, what + ": JSON nested deeper than " + std::to_string(max_depth) +
                                           " levels at byte " + std::to_string(at));
    }
    try {
        return nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::parse_error& e) {
        // nlohmann quotes the token it last read, which may be megabytes of the input.
        throw Error(ErrorKind::Format, what + ": malformed JSON at byte " + std::to_string(e.byte) + ": " + cut(e.what(), 300));
    } catch (const nlohmann::json::exception& e) {  // out_of_range: a number beyond double (1e999)
        throw Error(ErrorKind::Format, what + ": unreadable JSON: " + cut(e.what(), 300));
    }
}

nlohmann::json read_json_file(const std::string& path) {
    MappedFile file(path);
    return parse_json_text({reinterpret_cast<const char*>(file.data()), file.size()}, "'" + path + "'");
}

std::string json_excerpt(const nlohmann::json& v) { return cut(v.dump(), 60); }

const nlohmann::json& json_member(const nlohmann::json& obj, const std::string& key, const std::string& where) {
    if (!obj.is_object()) throw Error(ErrorKind::Format, where + ": expected a JSON object");
    auto it = obj.find(key);
    if (it == obj.end()) throw Error(ErrorKind::Format, where + ": missing key '" + key + "'");
    return *it;
}

std::string json_string(const nlohmann::json& obj, const std::string& key, const std::string& where) {
    const auto& v = json_member(obj, key, where);
    if (!v.is_string()) throw Error(ErrorKind::Format, where + ": '" + key + "' must be a string, got " + json_excerpt(v));
    return v.get<std::string>();
}

}  // namespace talkbox
