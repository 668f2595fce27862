// Writes a file so that readers see either nothing or the complete result: data goes to a private
// temporary file beside the target, which commit() flushes and moves into place (then syncs the
// folder, so the new name survives a crash). A writer destroyed without commit() removes its
// temporary file.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>

namespace talkbox {

// A private temporary file (mode 0600, a unique name from mkstemp) that is removed when the object
// is destroyed, on every path, unless release() hands the name over. For uploads that a library
// reads by name (libsndfile), and beneath AtomicFileWriter.
class TempFile {
public:
    // Creates `<dir>/<prefix>XXXXXX`. Throws Error (Io) naming the folder when it cannot.
    TempFile(const std::string& dir, const std::string& prefix);
    ~TempFile();
    TempFile(const TempFile&) = delete;
    TempFile& operator=(const TempFile&) = delete;

    const std::string& path() const { return path_; }
    int fd() const { return fd_; }
    void write(const void* data, size_t size);  // throws Error (Io); for unbuffered one-shot contents
    void sync();                                // fsync; throws Error (Io)
    void close();                               // throws Error (Io)
    void release() { path_.clear(); }           // the file was renamed away: do not remove it

private:
    std::string path_;
    int fd_ = -1;
};

class AtomicFileWriter {
public:
    // replace=false: commit() never overwrites an existing file but throws Error (Exists), so two
    // writers racing for one name (two servers sharing a folder) cannot silently lose a file.
    explicit AtomicFileWriter(const std::string& path, bool replace = true);  // throws Error (Io)
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
    bool replace_;
    TempFile temp_;
    FILE* file_ = nullptr;  // buffered stream over temp_.fd()
    size_t written_ = 0;
};

}  // namespace talkbox
