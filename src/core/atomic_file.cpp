#include "core/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <vector>

#include "talkbox/error.h"

namespace talkbox {

namespace {

std::string folder_of(const std::string& path) {
    const std::string dir = std::filesystem::path(path).parent_path().string();
    return dir.empty() ? "." : dir;
}

// Makes a new directory entry durable. Best effort: the file is already in place, and some file
// systems refuse fsync on folders (EINVAL); failing the write now would only mislead the caller.
void sync_folder(const std::string& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    ::fsync(fd);
    ::close(fd);
}

// rename(2) that fails with EEXIST instead of replacing `to`. renameat2 where the kernel and file
// system have it; otherwise link(2), which never replaces either (the caller removes `from`).
// Returns 0 or an errno value; *linked tells whether `from` still exists.
int move_no_replace(const std::string& from, const std::string& to, bool* linked) {
    *linked = false;
    if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
    if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) return errno;
    if (::link(from.c_str(), to.c_str()) != 0) return errno;
    *linked = true;
    return 0;
}

TempFile temp_beside(const std::string& path) {
    try {
        return TempFile(folder_of(path), std::filesystem::path(path).filename().string() + ".tmp-");
    } catch (const Error& e) {
        throw Error(ErrorKind::Io, "cannot write '" + path + "': " + e.what());
    }
}

}  // namespace

TempFile::TempFile(const std::string& dir, const std::string& prefix) {
    std::string name = dir + "/" + prefix + "XXXXXX";
    std::vector<char> buf(name.begin(), name.end());
    buf.push_back('\0');
    fd_ = ::mkostemp(buf.data(), O_CLOEXEC);  // mode 0600
    if (fd_ < 0) {
        throw Error(ErrorKind::Io, "cannot create a temporary file in '" + dir + "': " + std::strerror(errno));
    }
    path_ = buf.data();
}

TempFile::~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!path_.empty()) ::unlink(path_.c_str());
}

void TempFile::write(const void* data, size_t size) {
    const char* p = static_cast<const char*>(data);
    while (size > 0) {
        const ssize_t n = ::write(fd_, p, size);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw Error(ErrorKind::Io, "cannot write the temporary file '" + path_ + "': " + std::strerror(errno));
        p += n;
        size -= static_cast<size_t>(n);
    }
}

void TempFile::sync() {
    if (::fsync(fd_) != 0) throw Error(ErrorKind::Io, "cannot flush '" + path_ + "': " + std::strerror(errno));
}

void TempFile::close() {
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) throw Error(ErrorKind::Io, "cannot close '" + path_ + "': " + std::strerror(errno));
}

AtomicFileWriter::AtomicFileWriter(const std::string& path, bool replace)
    : path_(path), replace_(replace), temp_(temp_beside(path)) {
    // A stream of its own (dup) so that fclose leaves temp_'s descriptor for the fsync.
    const int fd = ::dup(temp_.fd());
    file_ = fd >= 0 ? ::fdopen(fd, "wb") : nullptr;
    if (!file_) {
        if (fd >= 0) ::close(fd);
        throw Error(ErrorKind::Io, "cannot write '" + path + "': " + std::strerror(errno));
    }
}

AtomicFileWriter::~AtomicFileWriter() {
    if (file_) std::fclose(file_);
}

void AtomicFileWriter::fail(const std::string& what) {
    const std::string reason = std::strerror(errno);
    std::fclose(file_);
    file_ = nullptr;
    throw Error(ErrorKind::Io, what + " '" + path_ + "': " + reason);
}

void AtomicFileWriter::write(const void* data, size_t size) {
    if (size > 0 && std::fwrite(data, 1, size, file_) != size) fail("cannot write");
    written_ += size;
}

void AtomicFileWriter::write_zeros(size_t size) {
    static const char zeros[64] = {};
    while (size > 0) {
        const size_t n = size < sizeof(zeros) ? size : sizeof(zeros);
        write(zeros, n);
        size -= n;
    }
}

void AtomicFileWriter::commit() {
    if (std::fflush(file_) != 0) fail("cannot flush");
    FILE* f = file_;
    file_ = nullptr;
    if (std::fclose(f) != 0) throw Error(ErrorKind::Io, "cannot close '" + path_ + "': " + std::strerror(errno));
    temp_.sync();
    temp_.close();
    if (replace_) {
        if (std::rename(temp_.path().c_str(), path_.c_str()) != 0) {
            throw Error(ErrorKind::Io, "cannot rename into '" + path_ + "': " + std::strerror(errno));
        }
        temp_.release();
    } else {
        bool linked = false;
        if (const int err = move_no_replace(temp_.path(), path_, &linked); err != 0) {
            if (err == EEXIST) throw Error(ErrorKind::Exists, "'" + path_ + "' already exists");
            throw Error(ErrorKind::Io, "cannot move the new file into '" + path_ + "': " + std::strerror(err));
        }
        if (!linked) temp_.release();  // renamed; a linked temporary name is removed by temp_
    }
    sync_folder(folder_of(path_));
}

}  // namespace talkbox
