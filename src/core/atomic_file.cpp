#include "core/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
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

// The process umask, read without changing it: umask(2) can only be read by setting it, which would
// race with files other threads create meanwhile.
mode_t current_umask() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);) {
        if (line.rfind("Umask:", 0) == 0) return static_cast<mode_t>(std::strtoul(line.c_str() + 6, nullptr, 8));
    }
    const mode_t mask = ::umask(022);  // kernels before 4.7 do not report it
    ::umask(mask);
    return mask;
}

bool writable_in_place(const struct stat& st) { return S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode); }

// Why an existing path cannot take an output, or nullptr: a folder never can; besides a regular
// file (replaced), only what is written in place can.
const char* why_not_output(const struct stat& st) {
    if (S_ISDIR(st.st_mode)) return "it is a folder";
    if (!S_ISREG(st.st_mode) && !writable_in_place(st)) return "it is not a regular file, a character device or a FIFO";
    return nullptr;
}

std::string quoted(const std::string& flag, const std::string& path) {
    return (flag.empty() ? "" : flag + ": ") + "cannot write '" + path + "': ";
}

}  // namespace

void check_output_path(const std::string& path, const std::string& flag) {
    const auto fail = [&](const std::string& why) { throw Error(ErrorKind::Io, quoted(flag, path) + why); };
    if (path.empty()) throw Error(ErrorKind::InvalidArgument, (flag.empty() ? "" : flag + ": ") + "the output path is empty");
    struct stat st{};
    if (::stat(path.c_str(), &st) == 0) {
        if (const char* why = why_not_output(st)) fail(why);
        if (writable_in_place(st)) return;
    } else if (errno != ENOENT) {
        fail(std::strerror(errno));
    }
    const std::string dir = folder_of(path);
    if (::stat(dir.c_str(), &st) != 0) fail("the folder '" + dir + "' does not exist");
    if (!S_ISDIR(st.st_mode)) fail("'" + dir + "' is not a folder");
    if (::access(dir.c_str(), W_OK | X_OK) != 0) fail("the folder '" + dir + "' is not writable (" + std::strerror(errno) + ")");
}

void check_distinct_outputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
    namespace fs = std::filesystem;
    const auto same = [](const std::string& a, const std::string& b) {
        std::error_code ec1, ec2;
        if (fs::exists(a, ec1) && fs::exists(b, ec2)) return fs::equivalent(a, b, ec1);
        return fs::weakly_canonical(a, ec1) == fs::weakly_canonical(b, ec2) && !ec1 && !ec2;
    };
    for (size_t i = 0; i < outputs.size(); ++i) {
        for (size_t j = i + 1; j < outputs.size(); ++j) {
            const auto& [fa, a] = outputs[i];
            const auto& [fb, b] = outputs[j];
            if (a.empty() || b.empty() || a == "-" || b == "-" || !same(a, b)) continue;
            throw Error(ErrorKind::InvalidArgument, fa + " and " + fb + " name the same file ('" + b +
                                                        "'): one would replace the other; give each its own file");
        }
    }
}

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
    : path_(path), target_(path), replace_(replace), mode_(0666 & ~current_umask()) {
    struct stat st{};
    int fd = -1;
    if (::stat(path.c_str(), &st) == 0) {
        // Without replace an existing name of any other kind fails at commit (Exists); a folder never fits.
        const char* why = why_not_output(st);
        if (why && (replace || S_ISDIR(st.st_mode))) throw Error(ErrorKind::Io, "cannot write '" + path + "': " + why);
        if (replace && writable_in_place(st)) {
            direct_ = true;
            fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
            if (fd < 0) throw Error(ErrorKind::Io, "cannot write '" + path + "': " + std::strerror(errno));
        } else if (replace) {
            mode_ = st.st_mode & 07777;
            std::error_code ec;
            if (std::filesystem::is_symlink(path, ec)) target_ = std::filesystem::canonical(path, ec).string();
            if (ec) target_ = path;
        }
    }
    if (!direct_) {
        try {
            temp_.emplace(folder_of(target_), std::filesystem::path(target_).filename().string() + ".tmp-");
        } catch (const Error& e) {
            throw Error(ErrorKind::Io, "cannot write '" + path + "': " + e.what());
        }
        // A stream of its own (dup) so that fclose leaves temp_'s descriptor for the fsync.
        fd = ::dup(temp_->fd());
    }
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

void write_files_together(const std::vector<FileContents>& files, AtomicFileWriter* written) {
    std::vector<std::unique_ptr<AtomicFileWriter>> own;
    std::vector<AtomicFileWriter*> writers;
    if (written) writers.push_back(written);
    for (const auto& f : files) {
        own.push_back(std::make_unique<AtomicFileWriter>(f.path));
        own.back()->write(f.data, f.size);
        writers.push_back(own.back().get());
    }
    for (auto* w : writers) w->finish();
    for (auto* w : writers) w->commit();
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

void AtomicFileWriter::finish() {
    if (finished_) return;
    finished_ = true;
    if (std::fflush(file_) != 0) fail("cannot write");
    FILE* f = file_;
    file_ = nullptr;
    if (std::fclose(f) != 0) throw Error(ErrorKind::Io, "cannot write '" + path_ + "': " + std::strerror(errno));
    if (direct_) return;  // a device or FIFO: nothing to sync or rename
    // Private while written; the final mode only once the contents are complete.
    if (::fchmod(temp_->fd(), mode_) != 0) throw Error(ErrorKind::Io, "cannot set the mode of '" + path_ + "': " + std::strerror(errno));
    temp_->sync();
    temp_->close();
}

void AtomicFileWriter::commit() {
    finish();
    if (direct_) return;
    if (replace_) {
        if (std::rename(temp_->path().c_str(), target_.c_str()) != 0) {
            throw Error(ErrorKind::Io, "cannot rename into '" + path_ + "': " + std::strerror(errno));
        }
        temp_->release();
    } else {
        bool linked = false;
        if (const int err = move_no_replace(temp_->path(), target_, &linked); err != 0) {
            if (err == EEXIST) throw Error(ErrorKind::Exists, "'" + path_ + "' already exists");
            throw Error(ErrorKind::Io, "cannot move the new file into '" + path_ + "': " + std::strerror(err));
        }
        if (!linked) temp_->release();  // renamed; a linked temporary name is removed by temp_
    }
    sync_folder(folder_of(target_));
}

}  // namespace talkbox
