#include <gtest/gtest.h>

#include <filesystem>

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
