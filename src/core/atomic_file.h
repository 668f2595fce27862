// Writes a file so that readers see either nothing or the complete result: data goes to a private
// temporary file beside the target, which commit() flushes and moves into place (then syncs the
// folder, so the new name survives a crash). A writer destroyed without commit() removes its
// temporary file. Only regular files are replaced so: a character device (/dev/null) or a FIFO is
// written directly, as a shell redirection would, and never replaced by a regular file.
#pragma once

#include <cstddef>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

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

// Checks, before any work, that `path` can take an output: not a folder, its folder exists, and if
// it exists it is a regular file, a character device or a FIFO. Throws Error (Io) whose message
// starts with `flag` ("--codes-out: ") when one is given.
void check_output_path(const std::string& path, const std::string& flag = "");

// Refuses two outputs of one run that name the same file (the same path, or one file reached by two
// names): the second would silently replace the first. Pairs of (flag, path); empty paths and "-"
// (stdout) are skipped. Throws Error (InvalidArgument).
void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs);

class AtomicFileWriter {
public:
    // replace=false: commit() never overwrites an existing file but throws Error (Exists), so two
    // writers racing for one name (two servers sharing a folder) cannot silently lose a file.
    // A new file gets mode 0666 & ~umask, a replaced one keeps its mode; a symbolic link to a
    // regular file is followed (the file is replaced, the link kept). A FIFO is opened here, which
    // waits for its reader.
    explicit AtomicFileWriter(const std::string& path, bool replace = true);  // throws Error (Io)
    ~AtomicFileWriter();
    AtomicFileWriter(const AtomicFileWriter&) = delete;
    AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

    void write(const void* data, size_t size);
    void write_zeros(size_t size);
    size_t bytes_written() const { return written_; }
    // Flushes, syncs and closes: every error of writing the contents (a full disk) surfaces here,
    // before anything is in place. commit() calls it when not done.
    void finish();
    void commit();

private:
    [[noreturn]] void fail(const std::string& what);

    std::string path_;    // as given, for messages
    std::string target_;  // the regular file replaced (symbolic links resolved)
    bool replace_;
    bool direct_ = false;  // a device or FIFO, written in place
    unsigned mode_ = 0;    // of the committed file
    std::optional<TempFile> temp_;
    FILE* file_ = nullptr;  // buffered stream over temp_.fd(), or over the device
    size_t written_ = 0;
    bool finished_ = false;
};

// Several whole files as one output (speak's audio and codes): all are written and finished before
// any is moved into place, so that a write error leaves none of them. `written`, when given, is
// one more file already written through its writer (speak's audio, written as it is encoded).
struct FileContents {
    std::string path;
    const void* data;
    size_t size;
};
void write_files_together(const std::vector<FileContents>& files, AtomicFileWriter* written = nullptr);

}  // namespace talkbox
