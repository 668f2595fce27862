// Crafted safetensors files through `talkbox convert` of a Qwen3-TTS snapshot whose
// model.safetensors is replaced.
#include <gtest/gtest.h>

#include "convert/crafted/crafted.h"
#include "support/test_support.h"

namespace talkbox::crafted {
namespace {

// An 8-byte little-endian header length, the header, then `data` bytes of payload.
std::string file_with(const std::string& header, size_t data = 0, uint64_t declared = ~uint64_t{0}) {
    std::string o;
    put64(o, declared == ~uint64_t{0} ? header.size() : declared);
    return o + header + std::string(data, '\0');
}
std::string one_tensor(const std::string& fields) { return "{\"w\": {" + fields + "}}"; }

class CraftedSafetensors : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = tmp_.file("snap");
        link_tree(testing::qwen_fixture("tiny-0.6B-Base"), dir_);
    }
    void expect(const std::string& bytes, const std::string& problem) {
        const std::string path = dir_ + "/model.safetensors";
        write(path, bytes);
        expect_refused(run_talkbox({"convert", dir_, "-o", tmp_.file("out.gguf")}), path, problem);
    }
    testing::TempDir tmp_;
    std::string dir_;
};

}  // namespace

TEST_F(CraftedSafetensors, ShapeNestedAMillionDeep) {
    const size_t n = 1000000;
    const std::string header = one_tensor("\"dtype\": \"F32\", \"shape\": " + std::string(n, '[') + std::string(n, ']') +
                                          ", \"data_offsets\": [0, 4]");
    expect(file_with(header, 4), "header: JSON nested deeper than 64 levels at byte 95");
}

TEST_F(CraftedSafetensors, MetadataNestedDeep) {
    expect(file_with("{\"__metadata__\": " + std::string(100000, '[') + "}"), "header: JSON nested deeper than 64 levels");
}

TEST_F(CraftedSafetensors, ShapeOfAMillionDimensions) {
    std::string shape = "[1";
    for (int i = 0; i < 1000000; ++i) shape += ",1";
    expect(file_with(one_tensor("\"dtype\": \"F32\", \"shape\": " + shape + "], \"data_offsets\": [0, 4]"), 4),
           "tensor 'w': shape has 1000001 dimensions, more than 8");
}

TEST_F(CraftedSafetensors, ShapeOverflows) {
    expect(file_with(one_tensor("\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296], \"data_offsets\": [0, 4]"), 4),
           "tensor 'w': shape [4294967296,4294967296] overflows");
}

TEST_F(CraftedSafetensors, NegativeDimension) {
    expect(file_with(one_tensor("\"dtype\": \"F32\", \"shape\": [-1], \"data_offsets\": [0, 4]"), 4),
           "tensor 'w': shape [-1] has a non-integer or negative entry");
}

TEST_F(CraftedSafetensors, HeaderLengthOfAnExabyte) {
    expect(file_with("{}", 0, uint64_t{1} << 60), "header length 1152921504606846976 exceeds 100 MB");
}

TEST_F(CraftedSafetensors, HeaderLengthPastTheEnd) {
    expect(file_with("{}", 0, 1000), "header length 1000 runs past the end of the file (10 bytes)");
}

TEST_F(CraftedSafetensors, TooShort) { expect("abc", "file is 3 bytes, too short for a safetensors header"); }

TEST_F(CraftedSafetensors, OffsetsPastTheData) {
    expect(file_with(one_tensor("\"dtype\": \"F32\", \"shape\": [1048576], \"data_offsets\": [0, 4194304]"), 4),
           "tensor 'w': data_offsets end 4194304 lies past the end of the data (4 bytes)");
}

TEST_F(CraftedSafetensors, OffsetsReversed) {
    expect(file_with(one_tensor("\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 0]"), 4),
           "tensor 'w': data_offsets [4, 0] are reversed");
}

TEST_F(CraftedSafetensors, SizeDisagreesWithShape) {
    expect(file_with(one_tensor("\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 4]"), 4),
           "tensor 'w': shape [2] of F32 needs 8 bytes but data_offsets span 4");
}

TEST_F(CraftedSafetensors, UnknownDtype) {
    expect(file_with(one_tensor("\"dtype\": \"F128\", \"shape\": [1], \"data_offsets\": [0, 16]"), 16),
           "tensor 'w': unknown dtype 'F128'");
}

TEST_F(CraftedSafetensors, TensorsOverlap) {
    const std::string t = "{\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}";
    expect(file_with("{\"a\": " + t + ", \"b\": " + t + "}", 8), "tensors 'a' and 'b' overlap");
}

TEST_F(CraftedSafetensors, HeaderNotAnObject) { expect(file_with("[1, 2]"), "header is not a JSON object"); }

TEST_F(CraftedSafetensors, OffsetsNotAPair) {
    expect(file_with(one_tensor("\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4, 8]"), 8),
           "tensor 'w': 'data_offsets' must be [begin, end]");
}

}  // namespace talkbox::crafted
