// Read-only memory map of a whole file (symlinks followed, as in a Hugging Face cache snapshot).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace talkbox {

class MappedFile {
public:
    explicit MappedFile(const std::string& path);  // throws Error (NotFound / Io)
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const uint8_t* data() const { return data_; }
    size_t size() const { return size_; }
    const std::string& path() const { return path_; }

    // Drops the resident pages of [p, p + n) (a range of this mapping) from the process: they count
    // in its RSS while mapped, and come back from the file if read again. For data just copied out.
    void release(const void* p, size_t n) const;

private:
    std::string path_;
    const uint8_t* data_ = nullptr;
    size_t size_ = 0;
};

}  // namespace talkbox
