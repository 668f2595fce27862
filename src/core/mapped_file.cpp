#include "core/mapped_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "talkbox/error.h"

namespace talkbox {

MappedFile::MappedFile(const std::string& path) : path_(path) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        const int err = errno;
        throw Error(err == ENOENT ? ErrorKind::NotFound : ErrorKind::Io,
                    "cannot open '" + path + "': " + std::strerror(err));
    }
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd);
        throw Error(ErrorKind::Io, "'" + path + "' is not a regular file");
    }
    size_ = static_cast<size_t>(st.st_size);
    if (size_ > 0) {
        void* p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            const int err = errno;
            ::close(fd);
            throw Error(ErrorKind::Io, "cannot map '" + path + "': " + std::strerror(err));
        }
        data_ = static_cast<const uint8_t*>(p);
    }
    ::close(fd);
}

void MappedFile::release(const void* p, size_t n) const {
    constexpr uintptr_t page = 4096;
    const auto begin = reinterpret_cast<uintptr_t>(p), end = begin + n;
    const auto base = reinterpret_cast<uintptr_t>(data_);
    if (!data_ || begin < base || end > base + size_) return;
    // Whole pages inside the range only: a neighbour's data may share the edge pages.
    const uintptr_t first = (begin + page - 1) & ~(page - 1), last = end & ~(page - 1);
    if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);  // advisory
}

MappedFile::~MappedFile() {
    if (data_) munmap(const_cast<uint8_t*>(data_), size_);
}

}  // namespace talkbox
