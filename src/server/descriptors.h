// File descriptors, which every client connection holds one of: the process's budget of them,
// and accepting connections when they have run out (EMFILE, ENFILE) without spinning.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>

struct sockaddr_storage;

namespace talkbox::http {

// Raises the soft RLIMIT_NOFILE to the hard one (a stock `ulimit -n 1024` is often far below
// what the hard limit allows) and returns the descriptors this process may then have open.
size_t raise_descriptor_limit();

// Descriptors open in this process now (/proc/self/fd).
size_t open_descriptors();

// accept4() on a listening socket that keeps answering when the process is out of descriptors.
// A spare descriptor is held in reserve: on EMFILE/ENFILE it is given up for a moment to accept
// one waiting client, send it `refusal` (503, or Wyoming's error event) and close it, so that
// clients are told rather than left hanging; then accepting pauses (paused(), retry_in()) so that
// a listener whose queue stays readable is not polled again at once, which would spin a core.
// The spare is one for the whole process, shared by every Acceptor (the HTTP and the Wyoming
// listener), and taken back before each accept when it was lost: see descriptors.cpp.
class Acceptor {
public:
    Acceptor();
    ~Acceptor();
    Acceptor(const Acceptor&) = delete;
    Acceptor& operator=(const Acceptor&) = delete;

    // The next connection, or -1 when none is waiting or descriptors ran out (then the bytes
    // `refusal` makes, only then, went to one client when the spare allowed it, and accepting is
    // paused).
    int accept(int listen_fd, sockaddr_storage& peer, int flags, const std::function<std::string()>& refusal);
    // Whether to leave the listener out of poll() now, and for how long still.
    bool paused() const;
    std::chrono::milliseconds retry_in() const;

private:
    void shed(int listen_fd, const std::function<std::string()>& refusal);
    std::chrono::steady_clock::time_point paused_until_{};
};

}  // namespace talkbox::http
