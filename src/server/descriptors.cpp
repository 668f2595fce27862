#include "server/descriptors.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <mutex>

namespace talkbox::http {

namespace {

// Long enough that a full listener costs a few wake-ups a second, short enough that a client
// arriving once descriptors are free again waits little.
constexpr std::chrono::milliseconds kPause{100};

int open_spare() { return ::open("/dev/null", O_RDONLY | O_CLOEXEC); }

// The descriptor table is the process's, so the spare is too. With a spare per listener, the one
// HTTP gave up for a refusal was at times taken by the Wyoming listener's accept (a client kept)
// before HTTP could take it back; HTTP then refused no one while clients kept coming, and
// /health waited in its queue unanswered. Every accept holds this lock, so the descriptor freed
// for a refusal is the one taken back; a spare lost anyway (another thread opened a file) is
// taken back before the next accept, so the first descriptor to come free goes to it.
struct Reserve {
    std::mutex accepting;
    int spare = -1;
    int acceptors = 0;
};

Reserve& reserve() {
    static Reserve r;
    return r;
}

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

Acceptor::Acceptor() {
    Reserve& r = reserve();
    std::lock_guard<std::mutex> lock(r.accepting);
    if (r.acceptors++ == 0 && r.spare < 0) r.spare = open_spare();
}

Acceptor::~Acceptor() {
    Reserve& r = reserve();
    std::lock_guard<std::mutex> lock(r.accepting);
    if (--r.acceptors == 0 && r.spare >= 0) {
        ::close(r.spare);
        r.spare = -1;
    }
}

int Acceptor::accept(int listen_fd, sockaddr_storage& peer, int flags, const std::function<std::string()>& refusal) {
    if (paused()) return -1;
    Reserve& r = reserve();
    std::lock_guard<std::mutex> lock(r.accepting);
    if (r.spare < 0) r.spare = open_spare();
    socklen_t len = sizeof peer;
    const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&peer), &len, flags);
    if (fd >= 0) return fd;
    if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) shed(listen_fd, refusal);
    return -1;  // EAGAIN (none waiting), or a transient error retried on the next wake-up
}

// Called with the reserve's lock held.
void Acceptor::shed(int listen_fd, const std::function<std::string()>& refusal) {
    paused_until_ = std::chrono::steady_clock::now() + kPause;
    Reserve& r = reserve();
    if (r.spare < 0) return;  // none to give up: this client waits for the next descriptor to come free
    ::close(r.spare);
    r.spare = -1;
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
        const std::string bytes = refusal();
        ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
        ::close(fd);
    }
    r.spare = open_spare();
}

bool Acceptor::paused() const { return std::chrono::steady_clock::now() < paused_until_; }

std::chrono::milliseconds Acceptor::retry_in() const {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(paused_until_ - std::chrono::steady_clock::now());
    return left.count() > 0 ? left : std::chrono::milliseconds(0);
}

}  // namespace talkbox::http
