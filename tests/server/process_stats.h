// What /proc says about a process (the server under test): CPU time, memory, descriptors and
// threads, for bounds that hold on busy cores (CPU time, not wall time) and for leak checks.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

namespace talkbox::testing {

// A "Name:   value kB" line of /proc/PID/status (VmRSS, VmHWM, Threads); 0 when absent.
inline uint64_t proc_status_value(pid_t pid, const std::string& name) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind(name + ":", 0) == 0) return std::stoull(line.substr(name.size() + 1));
    }
    return 0;
}

inline uint64_t rss_kb(pid_t pid) { return proc_status_value(pid, "VmRSS"); }
inline uint64_t peak_rss_kb(pid_t pid) { return proc_status_value(pid, "VmHWM"); }
inline uint64_t thread_count(pid_t pid) { return proc_status_value(pid, "Threads"); }

inline size_t open_fd_count(pid_t pid) {
    size_t n = 0;
    std::error_code ec;
    for (auto it = std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec);
         !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
        ++n;
    }
    return n;
}

// User + system CPU time so far, in clock ticks (1/100 s).
inline uint64_t cpu_ticks(pid_t pid) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
    const std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::istringstream fields(stat.substr(stat.rfind(')') + 2));  // after "pid (comm) ", from field 3
    std::string field;
    uint64_t utime = 0;
    for (int i = 3; fields >> field; ++i) {
        if (i == 14) utime = std::stoull(field);
        if (i == 15) return utime + std::stoull(field);
    }
    return 0;
}

}  // namespace talkbox::testing
