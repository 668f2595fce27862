#include <gtest/gtest.h>

#include <algorithm>
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
