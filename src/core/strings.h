// Small string helpers of names and messages, shared by the families and the front ends.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace talkbox {

// ASCII letters in lower case (names, header values); every other byte as it is.
std::string ascii_lower(std::string s);

// `s` without the spaces, tabs and line breaks at either end.
std::string trim(const std::string& s);

// The items with ", " between them: "a, b, c".
std::string join_names(const std::vector<std::string>& items);

// `v` as messages show a number: up to 6 significant digits ("%g"): "0.9", "4.29497e+09", "nan".
std::string number_text(double v);

// `v` with exactly `decimals` digits after the point ("%.*f"): "1.50".
std::string fixed_decimals(double v, int decimals);

// A byte count for people, in powers of 1024: "512 B", "1.5 KiB", "2.0 GiB".
std::string human_bytes(double bytes);

// `message` with every occurrence of `path` replaced by `name` ("the uploaded clip"), so that
// what a client is told never says where the server keeps its files.
std::string hide_path(std::string message, const std::string& path, const std::string& name);

// Standard base64 (RFC 4648, '+' '/', '=' padding) of `n` bytes.
std::string base64_encode(const void* data, size_t n);

}  // namespace talkbox
