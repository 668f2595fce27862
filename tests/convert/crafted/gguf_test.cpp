// Crafted GGUF files through `talkbox info`.
#include <gtest/gtest.h>

#include "convert/crafted/crafted.h"
#include "support/test_support.h"

namespace talkbox::crafted {
namespace {

constexpr uint32_t kU32 = 4, kString = 8, kArray = 9, kF32Type = 0;

std::string gstr(const std::string& s) {
    std::string o;
    put64(o, s.size());
    return o + s;
}
std::string header(uint64_t n_tensors, uint64_t n_kv) {
    std::string o = "GGUF";
    put32(o, 3);
    put64(o, n_tensors);
    put64(o, n_kv);
    return o;
}
std::string kv_string(const std::string& key, const std::string& value) {
    std::string o = gstr(key);
    put32(o, kString);
    return o + gstr(value);
}
std::string kv_u32(const std::string& key, uint32_t v) {
    std::string o = gstr(key);
    put32(o, kU32);
    put32(o, v);
    return o;
}
std::string tensor_info(const std::string& name, const std::vector<uint64_t>& ne, uint32_t type, uint64_t offset) {
    std::string o = gstr(name);
    put32(o, static_cast<uint32_t>(ne.size()));
    for (uint64_t n : ne) put64(o, n);
    put32(o, type);
    put64(o, offset);
    return o;
}
std::string pad32(std::string s) {
    s.resize((s.size() + 31) / 32 * 32, '\0');
    return s;
}

class CraftedGguf : public ::testing::Test {
protected:
    void expect(const std::string& bytes, const std::string& problem) {
        const std::string path = tmp_.file("model.gguf");
        write(path, bytes);
        expect_refused(run_talkbox({"info", path}), path, problem);
    }
    testing::TempDir tmp_;
};

const std::string kNotGguf = "is not a valid GGUF file";

}  // namespace

TEST_F(CraftedGguf, BadMagic) { expect("GGML" + header(0, 0).substr(4), kNotGguf); }

TEST_F(CraftedGguf, TruncatedHeader) { expect(header(0, 0).substr(0, 12), kNotGguf); }

TEST_F(CraftedGguf, TensorCountOfAnExabyte) { expect(header(uint64_t{1} << 60, 0), "1152921504606846976 tensors, more than 16384"); }

TEST_F(CraftedGguf, KeyCountOfAnExabyte) { expect(header(0, uint64_t{1} << 60), "1152921504606846976 metadata keys, more than 4096"); }

TEST_F(CraftedGguf, KeyLongerThanTheFile) {
    std::string b = header(0, 1);
    put64(b, uint64_t{1} << 40);
    expect(b + "abc", kNotGguf);
}

TEST_F(CraftedGguf, StringValueOfAnExabyte) {
    std::string b = header(0, 1) + gstr("general.name");
    put32(b, kString);
    put64(b, uint64_t{1} << 60);
    expect(b, kNotGguf);
}

TEST_F(CraftedGguf, ArrayOfAnExabyte) {
    std::string b = header(0, 1) + gstr("tokenizer.ggml.tokens");
    put32(b, kArray);
    put32(b, kString);
    put64(b, uint64_t{1} << 60);
    expect(b, kNotGguf);
}

TEST_F(CraftedGguf, NestedArrayType) {
    std::string b = header(0, 1) + gstr("a");
    put32(b, kArray);
    put32(b, kArray);
    put64(b, 1);
    expect(b, kNotGguf);
}

TEST_F(CraftedGguf, UnknownValueType) {
    std::string b = header(0, 1) + gstr("a");
    put32(b, 999);
    expect(b, kNotGguf);
}

TEST_F(CraftedGguf, TensorWithHundredDimensions) {
    expect(header(1, 0) + tensor_info("t", std::vector<uint64_t>(100, 1), kF32Type, 0), kNotGguf);
}

TEST_F(CraftedGguf, TensorTypeOutOfRange) { expect(header(1, 0) + tensor_info("t", {4}, 999, 0), kNotGguf); }

TEST_F(CraftedGguf, NegativeDimension) { expect(header(1, 0) + tensor_info("t", {~uint64_t{0}}, kF32Type, 0), kNotGguf); }

TEST_F(CraftedGguf, ElementCountOverflows) {
    expect(header(1, 0) + tensor_info("t", {uint64_t{1} << 32, uint64_t{1} << 32}, kF32Type, 0), kNotGguf);
}

TEST_F(CraftedGguf, TensorOffsetOutOfOrder) {
    expect(pad32(header(1, 0) + tensor_info("t", {4}, kF32Type, 1 << 20)) + std::string(16, '\0'), kNotGguf);
}

TEST_F(CraftedGguf, TensorDataPastTheEnd) {
    // A terabyte tensor at offset 0 of a 32-byte data section.
    expect(pad32(header(1, 0) + tensor_info("t", {uint64_t{1} << 38}, kF32Type, 0)) + std::string(32, '\0'),
           "data of tensor 't' lies past the end of the file");
}

TEST_F(CraftedGguf, DuplicateTensorNames) {
    expect(pad32(header(2, 0) + tensor_info("t", {8}, kF32Type, 0) + tensor_info("t", {8}, kF32Type, 32)) +
               std::string(64, '\0'),
           kNotGguf);
}

TEST_F(CraftedGguf, AlignmentNotAPowerOfTwo) {
    expect(header(0, 1) + kv_u32("general.alignment", 48), kNotGguf);
}

TEST_F(CraftedGguf, ManyTensors) {
    // ggml compares every tensor name with every earlier one: 100000 names would take minutes.
    std::string b = header(100000, 0);
    for (int i = 0; i < 100000; ++i) b += tensor_info("t" + std::to_string(i), {1}, kF32Type, 32 * static_cast<uint64_t>(i));
    expect(b, "100000 tensors, more than 16384");
}

TEST_F(CraftedGguf, MostTensorsWithLongSimilarNames) {
    // At the limit, with 63-byte names that differ only at the end, ggml's check still finishes in time;
    // the file is then refused for its missing metadata.
    std::string b = header(16384, 0);
    for (uint64_t i = 0; i < 16384; ++i) {
        const std::string id = std::to_string(i);
        b += tensor_info(std::string(63 - id.size(), 'n') + id, {8}, kF32Type, 32 * i);
    }
    expect(pad32(b) + std::string(32 * 16384, '\0'), "general.architecture is missing, expected one of");
}

TEST_F(CraftedGguf, ManyKeys) {
    std::string b = header(0, 100000);
    for (int i = 0; i < 100000; ++i) b += kv_u32("k" + std::to_string(i), 0);
    expect(b, "more than");
}

TEST_F(CraftedGguf, LongKeys) {
    // Keys of 64 KB that differ only at the end would make ggml's duplicate check compare them in full.
    std::string b = header(0, 2);
    for (int i = 0; i < 2; ++i) b += kv_u32(std::string(65536, 'k') + std::to_string(i), 0);
    expect(b, "metadata key 0 is longer than 256 bytes");
}

TEST_F(CraftedGguf, ArchitectureOfTheWrongType) {
    expect(header(0, 1) + kv_u32("general.architecture", 7), "'general.architecture' has type u32, expected str");
}

TEST_F(CraftedGguf, UnknownArchitecture) {
    expect(header(0, 1) + kv_string("general.architecture", "llama"), "llama");
}

}  // namespace talkbox::crafted
