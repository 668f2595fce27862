#include <gtest/gtest.h>

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "core/atomic_file.h"
#include "support/test_support.h"
#include "talkbox/error.h"

namespace fs = std::filesystem;
using namespace talkbox;
using talkbox::testing::TempDir;

TEST(AtomicFileWriter, CommitMakesTheFileAppearWhole) {
    TempDir dir;
    const std::string path = dir.file("out.bin");
    {
        AtomicFileWriter w(path);
        w.write("abc", 3);
        w.write_zeros(5);
        EXPECT_FALSE(fs::exists(path)) << "target must not exist before commit";
        w.commit();
    }
    EXPECT_EQ(fs::file_size(path), 8u);
    EXPECT_EQ(talkbox::testing::read_text(path).substr(0, 3), "abc");
    EXPECT_EQ(std::distance(fs::directory_iterator(dir.path()), fs::directory_iterator()), 1) << "temp file left behind";
}

TEST(AtomicFileWriter, AbandonedWriteLeavesNothing) {
    TempDir dir;
    {
        AtomicFileWriter w(dir.file("out.bin"));
        w.write("partial", 7);
    }
    EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(AtomicFileWriter, UnwritableLocationIsAnIoError) {
    TempDir dir;
    try {
        AtomicFileWriter w(dir.file("no/such/folder/out.bin"));
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Io);
        EXPECT_NE(std::string(e.what()).find("cannot write"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("no/such/folder/out.bin"), std::string::npos) << e.what();
    }
}

namespace {

std::vector<std::string> entries(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

unsigned mode_of(const std::string& path) { return static_cast<unsigned>(fs::status(path).permissions() & fs::perms::all); }

}  // namespace

TEST(AtomicFileWriter, NoReplaceRefusesAnExistingFileAndKeepsIt) {
    TempDir dir;
    const std::string path = dir.file("voice.bin");
    talkbox::testing::write_text(path, "first");
    try {
        AtomicFileWriter w(path, /*replace=*/false);
        w.write("second", 6);
        w.commit();
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Exists);
        EXPECT_EQ(std::string(e.what()), "'" + path + "' already exists");
    }
    EXPECT_EQ(talkbox::testing::read_text(path), "first");
    EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"voice.bin"}) << "temp file left behind";
}

TEST(AtomicFileWriter, NoReplaceCreatesAMissingFile) {
    TempDir dir;
    {
        AtomicFileWriter w(dir.file("new.bin"), /*replace=*/false);
        w.write("abc", 3);
        w.commit();
    }
    EXPECT_EQ(talkbox::testing::read_text(dir.file("new.bin")), "abc");
    EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"new.bin"});
}

TEST(AtomicFileWriter, TemporaryFileIsPrivate) {
    TempDir dir;
    AtomicFileWriter w(dir.file("out.bin"));
    const auto names = entries(dir.path());
    ASSERT_EQ(names.size(), 1u);
    EXPECT_EQ(names[0].rfind("out.bin.tmp-", 0), 0u) << names[0];
    EXPECT_EQ(mode_of(dir.file(names[0])), 0600u);
}

TEST(AtomicFileWriter, NewFileFollowsTheUmaskReplacedFileKeepsItsMode) {
    TempDir dir;
    const mode_t old = ::umask(022);
    {
        AtomicFileWriter w(dir.file("new.bin"));
        w.write("a", 1);
        w.commit();
    }
    ::umask(old);
    EXPECT_EQ(mode_of(dir.file("new.bin")), 0644u);
    fs::permissions(dir.file("new.bin"), fs::perms(0600));
    AtomicFileWriter w(dir.file("new.bin"));
    w.write("b", 1);
    w.commit();
    EXPECT_EQ(mode_of(dir.file("new.bin")), 0600u);
    EXPECT_EQ(talkbox::testing::read_text(dir.file("new.bin")), "b");
}

// speak's audio and codes: a failure writing one leaves neither.
TEST(WriteFilesTogether, AFailureLeavesNone) {
    TempDir dir;
    try {
        write_files_together({{dir.file("audio.wav"), "RIFF", 4}, {dir.file("missing/codes.json"), "{}", 2}});
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Io);
        EXPECT_NE(std::string(e.what()).find("missing/codes.json"), std::string::npos) << e.what();
    }
    EXPECT_TRUE(fs::is_empty(dir.path()));
    write_files_together({{dir.file("audio.wav"), "RIFF", 4}, {dir.file("codes.json"), "{}", 2}});
    EXPECT_EQ(entries(dir.path()), (std::vector<std::string>{"audio.wav", "codes.json"}));
}

TEST(CheckOutputPath, SaysWhatIsWrongWithTheDestination) {
    TempDir dir;
    const auto message = [](const std::string& path) {
        try {
            check_output_path(path, "-o");
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string();
    };
    EXPECT_EQ(message(dir.file("x.wav")), "");
    EXPECT_EQ(message("/dev/null"), "");
    EXPECT_EQ(message(dir.path()), "-o: cannot write '" + dir.path() + "': it is a folder");
    EXPECT_EQ(message(dir.file("no/x.wav")), "-o: cannot write '" + dir.file("no/x.wav") + "': the folder '" + dir.file("no") + "' does not exist");
    talkbox::testing::write_text(dir.file("plain"), "");
    EXPECT_EQ(message(dir.file("plain/x.wav")), "-o: cannot write '" + dir.file("plain/x.wav") + "': " + std::strerror(ENOTDIR));
    EXPECT_THROW(check_distinct_outputs({{"-o", dir.file("a")}, {"--codes-out", dir.path() + "/../" +
                                                                     fs::path(dir.path()).filename().string() + "/a"}}),
                 Error);
    EXPECT_NO_THROW(check_distinct_outputs({{"-o", "-"}, {"--codes-out", "-"}}));
}

TEST(TempFile, IsPrivateAndRemovedOnEveryPath) {
    TempDir dir;
    std::string path;
    {
        TempFile t(dir.path(), ".upload-");
        path = t.path();
        EXPECT_EQ(path.rfind(dir.path() + "/.upload-", 0), 0u) << path;
        EXPECT_EQ(mode_of(path), 0600u);
        t.write("clip", 4);
        t.close();
        EXPECT_EQ(talkbox::testing::read_text(path), "clip");
    }
    EXPECT_FALSE(fs::exists(path));
    try {
        TempFile t(dir.path(), ".upload-");
        path = t.path();
        throw std::runtime_error("request failed");
    } catch (const std::runtime_error&) {
    }
    EXPECT_FALSE(fs::exists(path));
    EXPECT_TRUE(fs::is_empty(dir.path()));
}

TEST(TempFile, MissingFolderIsAnIoErrorNamingIt) {
    TempDir dir;
    try {
        TempFile t(dir.file("gone"), ".upload-");
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::Io);
        EXPECT_EQ(std::string(e.what()), "cannot create a temporary file in '" + dir.file("gone") + "': No such file or directory");
    }
}
