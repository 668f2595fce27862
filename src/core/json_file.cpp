#include "core/json_file.h"

#include "core/mapped_file.h"
#include "talkbox/error.h"

namespace talkbox {

nlohmann::json read_json_file(const std::string& path) {
    MappedFile file(path);
    const char* begin = reinterpret_cast<const char*>(file.data());
    try {
        return nlohmann::json::parse(begin, begin + file.size());
    } catch (const nlohmann::json::parse_error& e) {
        throw Error(ErrorKind::Format, "malformed JSON in '" + path + "' at byte " + std::to_string(e.byte) +
                                           ": " + e.what());
    }
}

const nlohmann::json& json_member(const nlohmann::json& obj, const std::string& key, const std::string& where) {
    if (!obj.is_object()) throw Error(ErrorKind::Format, where + ": expected a JSON object");
    auto it = obj.find(key);
    if (it == obj.end()) throw Error(ErrorKind::Format, where + ": missing key '" + key + "'");
    return *it;
}

int64_t json_int(const nlohmann::json& obj, const std::string& key, const std::string& where) {
    const auto& v = json_member(obj, key, where);
    if (!v.is_number_integer()) {
        throw Error(ErrorKind::Format, where + ": '" + key + "' must be an integer, got " + v.dump());
    }
    return v.get<int64_t>();
}

double json_number(const nlohmann::json& obj, const std::string& key, const std::string& where) {
    const auto& v = json_member(obj, key, where);
    if (!v.is_number()) throw Error(ErrorKind::Format, where + ": '" + key + "' must be a number, got " + v.dump());
    return v.get<double>();
}

bool json_bool(const nlohmann::json& obj, const std::string& key, const std::string& where) {
    const auto& v = json_member(obj, key, where);
    if (!v.is_boolean()) throw Error(ErrorKind::Format, where + ": '" + key + "' must be true/false, got " + v.dump());
    return v.get<bool>();
}

std::string json_string(const nlohmann::json& obj, const std::string& key, const std::string& where) {
    const auto& v = json_member(obj, key, where);
    if (!v.is_string()) throw Error(ErrorKind::Format, where + ": '" + key + "' must be a string, got " + v.dump());
    return v.get<std::string>();
}

}  // namespace talkbox
