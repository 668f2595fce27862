// Crafted-input tests: hostile files generated at run time, fed to the real `talkbox` binary, which
// must refuse each one with exit code 1 and a message naming the file and the fault, quickly and in
// bounded memory.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace talkbox::crafted {

struct Run {
    int exit_code = -1;  // 128 + signal when killed
    std::string err;     // stderr
    // CPU time (user + system) the process used: its own work, which two busy cores sharing the
    // machine do not inflate as they do wall time (a 1 s parse once took 3.7 s of wall time there).
    double cpu_seconds = 0;
    long max_rss_mb = 0;
};

// Runs build/bin/talkbox with `args` (no shell), stdout discarded, under an address-space limit of
// 4 GiB so that a runaway allocation fails instead of exhausting the machine.
Run run_talkbox(const std::vector<std::string>& args);

// The contract for every crafted file: exit 1, stderr names `file` and contains `problem`, done
// within 3 s of CPU time (1 s plus slack for slow machines), and at most 300 MB resident.
void expect_refused(const Run& r, const std::string& file, const std::string& problem);

// A folder mirroring `from` with symlinks to its files, so a test can replace one file cheaply.
void link_tree(const std::string& from, const std::string& to);

void put16(std::string& s, uint32_t v);
void put32(std::string& s, uint32_t v);
void put64(std::string& s, uint64_t v);
void write(const std::string& path, const std::string& bytes);

}  // namespace talkbox::crafted
