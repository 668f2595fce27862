// Writes a file so that readers see either nothing or the complete result: data goes to a
// temporary file beside the target, which commit() flushes and renames into place. A writer
// destroyed without commit() removes its temporary file.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

namespace talkbox {

class AtomicFileWriter {
public:
    explicit AtomicFileWriter(const std::string& path);  // throws Error (Io)
    ~AtomicFileWriter();
    AtomicFileWriter(const AtomicFileWriter&) = delete;
    AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

    void write(const void* data, size_t size);
    void write_zeros(size_t size);
    size_t bytes_written() const { return written_; }
    void commit();

private:
    [[noreturn]] void fail(const std::string& what);

    std::string path_;
    std::string temp_path_;
    FILE* file_ = nullptr;
    size_t written_ = 0;
};

}  // namespace talkbox
