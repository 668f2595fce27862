#include "server/descriptors.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace talkbox::http {

namespace {

// Long enough that a full listener costs a few wake-ups a second, short enough that a client
// arriving once descriptors are free again waits little.
constexpr std::chrono::milliseconds kPause{100};

int open_spare() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

}  // namespace

size_t raise_descriptor_limit() {
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return 1024;
    if (lim.rlim_cur < lim.rlim_max) {
        rlimit raised = lim;
        raised.rlim_cur = lim.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &raised) == 0) lim = raised;
    }
    return lim.rlim_cur == RLIM_INFINITY ? static_cast<size_t>(1) << 20 : static_cast<size_t>(lim.rlim_cur);
}

size_t open_descriptors() {
    DIR* dir = opendir("/proc/self/fd");
    if (!dir) return 0;
    size_t n = 0;
    while (const dirent* e = readdir(dir)) n += e->d_name[0] != '.';
    closedir(dir);
    return n > 0 ? n - 1 : 0;  // not counting the one reading the folder
}

Acceptor::Acceptor() : spare_(open_spare()) {}

Acceptor::~Acceptor() {
    if (spare_ >= 0) ::close(spare_);
}

int Acceptor::accept(int listen_fd, sockaddr_storage& peer, int flags, const std::function<std::string()>& refusal) {
    if (paused()) return -1;
    socklen_t len = sizeof peer;
    const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&peer), &len, flags);
    if (fd >= 0) return fd;
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) shed(listen_fd, refusal);
    return -1;  // EAGAIN (none waiting), or a transient error retried on the next wake-up
}

void Acceptor::shed(int listen_fd, const std::function<std::string()>& refusal) {
    paused_until_ = std::chrono::steady_clock::now() + kPause;
    if (spare_ < 0) {
        spare_ = open_spare();  // descriptors came back since the last time
        return;
    }
    ::close(spare_);
    spare_ = -1;
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
        const std::string bytes = refusal();
        ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        ::close(fd);
    }
    spare_ = open_spare();
}

bool Acceptor::paused() const { return std::chrono::steady_clock::now() < paused_until_; }

std::chrono::milliseconds Acceptor::retry_in() const {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(paused_until_ - std::chrono::steady_clock::now());
    return left.count() > 0 ? left : std::chrono::milliseconds(0);
}

}  // namespace talkbox::http
