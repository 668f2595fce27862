// For targets whose parser takes a path: each input is written to one file per fuzzing process.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace talkbox::fuzz {

// Writes the input to /tmp/talkbox-fuzz-<pid><suffix> and returns its path ("" if it cannot).
inline std::string temp_file(const uint8_t* data, size_t size, const char* suffix) {
    static const std::string path = "/tmp/talkbox-fuzz-" + std::to_string(getpid()) + suffix;
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return "";
    const bool ok = std::fwrite(data, 1, size, f) == size;
    return std::fclose(f) == 0 && ok ? path : "";
}

}  // namespace talkbox::fuzz
