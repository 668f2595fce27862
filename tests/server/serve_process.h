// A real `talkbox serve` on 127.0.0.1 (any free port) for the HTTP, Wyoming, npm-client and browser tests.
#pragma once

#include <chrono>
#include <string>
#include <thread>
#include <sys/types.h>
#include <vector>

#include "support/test_support.h"

namespace talkbox::testing {

class ServeProcess {
public:
    // Starts build/bin/talkbox serve ARGS --host 127.0.0.1 --port 0 (in `cwd` when given; through
    // `launcher` when given, a command that executes its arguments in its own process, such as
    // prlimit --nofile=64:64 --) and waits until it listens (throws with the server's log when it
    // exits or does not listen within 60 s).
    // `binary`: another build of the command line (a test's, with a family of its own registered).
    explicit ServeProcess(const std::vector<std::string>& args, const std::string& cwd = "",
                          const std::vector<std::string>& launcher = {}, const std::string& binary = TALKBOX_BINARY);
    ~ServeProcess();
    ServeProcess(const ServeProcess&) = delete;
    ServeProcess& operator=(const ServeProcess&) = delete;

    int port() const { return port_; }                  // HTTP (0 with --no-http)
    int wyoming_port() const { return wyoming_port_; }  // with --wyoming-port (0: none)
    pid_t pid() const { return pid_; }
    std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
    std::string log() const;  // what the server wrote to stderr so far
    int stop();               // SIGTERM, then the exit status (0: clean shutdown)
    void signal(int sig);     // sends `sig` to the server
    // The exit status once the server has exited (SIGKILL after `seconds`: 128 + SIGKILL).
    int wait(double seconds);

private:
    TempDir dir_;
    pid_t pid_ = -1;
    int port_ = 0, wyoming_port_ = 0;
};

// Starts argv[0] (looked up on PATH) with stdin from /dev/null, stdout to `out` and stderr to `err`
// (the same file: both appended to it), in `cwd` when given; returns its pid, throws
// std::runtime_error(`what_failed`) when it cannot start.
pid_t spawn_process(std::vector<std::string> argv, const std::string& out, const std::string& err,
                    const std::string& what_failed, const std::string& cwd = "");

// Waits until `pred` holds (polling every 20 ms) or `limit_s` passes; returns whether it held.
template <class F>
bool eventually(double limit_s, F pred) {
    const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(limit_s);
    while (std::chrono::steady_clock::now() < end) {
        if (pred()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return pred();
}

// Waits until the server's log holds `text` (up to `limit_s`); returns whether it does.
inline bool log_has(const ServeProcess& server, const std::string& text, double limit_s = 10) {
    return eventually(limit_s, [&] { return server.log().find(text) != std::string::npos; });
}

// Runs a shell command with a time limit; returns its exit status and output (stdout + stderr).
CommandResult run_command(const std::string& command, int timeout_s);

}  // namespace talkbox::testing
