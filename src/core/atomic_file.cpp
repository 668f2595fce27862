#include "core/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <unistd.h>

#include "talkbox/error.h"

namespace talkbox {

AtomicFileWriter::AtomicFileWriter(const std::string& path)
    : path_(path), temp_path_(path + ".tmp-" + std::to_string(getpid())) {
    file_ = std::fopen(temp_path_.c_str(), "wb");
    if (!file_) {
        throw Error(ErrorKind::Io, "cannot write '" + path + "': " + std::strerror(errno));
    }
}

AtomicFileWriter::~AtomicFileWriter() {
    if (file_) {
        std::fclose(file_);
        std::remove(temp_path_.c_str());
    }
}

void AtomicFileWriter::fail(const std::string& what) {
    const std::string reason = std::strerror(errno);
    std::fclose(file_);
    file_ = nullptr;
    std::remove(temp_path_.c_str());
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
    if (std::fflush(file_) != 0 || fsync(fileno(file_)) != 0) fail("cannot flush");
    if (std::fclose(file_) != 0) {
        file_ = nullptr;
        std::remove(temp_path_.c_str());
        throw Error(ErrorKind::Io, "cannot close '" + path_ + "': " + std::strerror(errno));
    }
    file_ = nullptr;
    if (std::rename(temp_path_.c_str(), path_.c_str()) != 0) {
        const std::string reason = std::strerror(errno);
        std::remove(temp_path_.c_str());
        throw Error(ErrorKind::Io, "cannot rename into '" + path_ + "': " + reason);
    }
}

}  // namespace talkbox
