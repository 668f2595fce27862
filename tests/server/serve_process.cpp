#include "server/serve_process.h"

#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <spawn.h>
#include <stdexcept>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

extern char** environ;

namespace talkbox::testing {

pid_t spawn_process(std::vector<std::string> argv, const std::string& out, const std::string& err,
                    const std::string& what_failed, const std::string& cwd) {
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    const bool one_file = out == err;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | (one_file ? O_APPEND : O_TRUNC), 0644);
    if (!cwd.empty()) posix_spawn_file_actions_addchdir_np(&actions, cwd.c_str());
    pid_t pid = -1;
    const int rc = posix_spawnp(&pid, cargv[0], &actions, nullptr, cargv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) throw std::runtime_error(what_failed);
    return pid;
}

ServeProcess::ServeProcess(const std::vector<std::string>& args, const std::string& cwd, const std::vector<std::string>& launcher,
                           const std::string& binary) {
    std::vector<std::string> argv = launcher;
    for (const std::string& a : {binary, std::string("serve")}) argv.push_back(a);
    argv.insert(argv.end(), args.begin(), args.end());
    for (const char* a : {"--host", "127.0.0.1", "--port", "0"}) argv.emplace_back(a);
    pid_ = spawn_process(argv, dir_.file("out"), dir_.file("err"), "cannot start " + binary, cwd);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    // "talkbox: serving N models on http://127.0.0.1:P and tcp://127.0.0.1:W (Wyoming) (...)\n"
    const std::string marker = "talkbox: serving ", http = "http://127.0.0.1:", wyoming = "tcp://127.0.0.1:";
    while (std::chrono::steady_clock::now() < deadline) {
        const std::string err = log();
        const auto at = err.find(marker);
        const auto end = at == std::string::npos ? at : err.find('\n', at);
        if (end != std::string::npos) {
            const std::string line = err.substr(at, end - at);
            if (const auto h = line.find(http); h != std::string::npos) port_ = std::stoi(line.substr(h + http.size()));
            if (const auto w = line.find(wyoming); w != std::string::npos) wyoming_port_ = std::stoi(line.substr(w + wyoming.size()));
            return;
        }
        int status = 0;
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            throw std::runtime_error("talkbox serve exited before listening:\n" + err);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    throw std::runtime_error("talkbox serve did not listen within 60 s:\n" + log());
}

ServeProcess::~ServeProcess() {
    if (pid_ > 0) stop();
}

std::string ServeProcess::log() const { return read_text(dir_.file("err")); }

int ServeProcess::stop() {
    if (pid_ <= 0) return -1;
    kill(pid_, SIGTERM);
    return wait(30);
}

void ServeProcess::signal(int sig) {
    if (pid_ > 0) kill(pid_, sig);
}

int ServeProcess::wait(double seconds) {
    if (pid_ <= 0) return -1;
    int status = 0;
    for (int i = 0; i < static_cast<int>(seconds * 10); ++i) {
        if (waitpid(pid_, &status, WNOHANG) == pid_) {
            pid_ = -1;
            return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    kill(pid_, SIGKILL);
    waitpid(pid_, &status, 0);
    pid_ = -1;
    return 128 + SIGKILL;
}

CommandResult run_command(const std::string& command, int timeout_s) {
    TempDir tmp;
    write_text(tmp.file("cmd.sh"), command + "\n");
    const std::string cmd = "timeout " + std::to_string(timeout_s) + " sh " + tmp.file("cmd.sh") + " >" + tmp.file("out") + " 2>&1 </dev/null";
    const int status = std::system(cmd.c_str());
    CommandResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = read_text(tmp.file("out"));
    return r;
}

}  // namespace talkbox::testing
