#include "convert/crafted/crafted.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "support/test_support.h"

namespace fs = std::filesystem;

namespace talkbox::crafted {

Run run_talkbox(const std::vector<std::string>& args) {
    const testing::TempDir tmp;
    const std::string err_path = tmp.file("err");
    std::vector<std::string> argv_s = {TALKBOX_BINARY};
    argv_s.insert(argv_s.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (auto& a : argv_s) argv.push_back(a.data());
    argv.push_back(nullptr);

    const pid_t pid = fork();
    if (pid == 0) {
        // An address-space cap turns runaway allocation into a clean failure; AddressSanitizer
        // (the TALKBOX_FUZZ build runs this suite too) reserves terabytes of shadow and cannot run
        // under one, so there the peak-RSS check below is the bound.
        if (!testing::kUnderAsan) {
            const rlimit as{rlim_t{4} << 30, rlim_t{4} << 30};
            setrlimit(RLIMIT_AS, &as);
        }
        const int null = open("/dev/null", O_RDWR);
        const int err = open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(null, 0);
        dup2(null, 1);
        dup2(err, 2);
        execv(argv[0], argv.data());
        _exit(127);
    }
    Run r;
    int status = 0;
    rusage usage{};
    if (pid < 0 || wait4(pid, &status, 0, &usage) != pid) {
        ADD_FAILURE() << "could not run " << TALKBOX_BINARY;
        return r;
    }
    const auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
    r.cpu_seconds = seconds(usage.ru_utime) + seconds(usage.ru_stime);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.max_rss_mb = usage.ru_maxrss / 1024;
    r.err = testing::read_text(err_path);
    return r;
}

void expect_refused(const Run& r, const std::string& file, const std::string& problem) {
    const std::string err = r.err.size() > 2000 ? r.err.substr(0, 2000) + "..." : r.err;
    EXPECT_EQ(r.exit_code, 1) << err;
    EXPECT_NE(r.err.find(file), std::string::npos) << "stderr does not name " << file << ": " << err;
    EXPECT_NE(r.err.find(problem), std::string::npos) << "stderr lacks '" << problem << "': " << err;
    EXPECT_LT(r.err.size(), 2000u) << "an oversized message: " << err;
    if (testing::kUnderAsan) return;  // time and memory bounds hold for the real build, not an instrumented one
    EXPECT_LT(r.cpu_seconds, 3.0) << err;
    EXPECT_LT(r.max_rss_mb, 300) << err;
}

void link_tree(const std::string& from, const std::string& to) {
    fs::create_directories(to);
    for (const auto& e : fs::directory_iterator(from)) {
        const std::string dest = to + "/" + e.path().filename().string();
        if (e.is_directory()) link_tree(e.path().string(), dest);
        else fs::create_symlink(fs::canonical(e.path()), dest);
    }
}

void put16(std::string& s, uint32_t v) {
    s += static_cast<char>(v & 0xFF);
    s += static_cast<char>((v >> 8) & 0xFF);
}
void put32(std::string& s, uint32_t v) {
    put16(s, v & 0xFFFF);
    put16(s, v >> 16);
}
void put64(std::string& s, uint64_t v) {
    put32(s, static_cast<uint32_t>(v));
    put32(s, static_cast<uint32_t>(v >> 32));
}

void write(const std::string& path, const std::string& bytes) {
    fs::remove(path);  // a symlink from link_tree: replace it, never write through it
    std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace talkbox::crafted
