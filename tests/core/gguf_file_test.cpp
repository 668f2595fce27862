#include <gtest/gtest.h>

#include <memory>

#include "core/gguf_file.h"
#include "support/test_support.h"
#include "talkbox/error.h"

using namespace talkbox;
using talkbox::testing::TempDir;

namespace {

// Writes a small GGUF with a few typed keys and one F32 tensor [3, 2].
std::string write_sample(const TempDir& dir) {
    gguf_context* ctx = gguf_init_empty();
    gguf_set_val_str(ctx, "s", "hello");
    gguf_set_val_u32(ctx, "u", 7);
    gguf_set_val_f32(ctx, "f", 0.5f);
    gguf_set_val_bool(ctx, "b", true);
    const int32_t ints[] = {1, 2, 3};
    gguf_set_arr_data(ctx, "ints", GGUF_TYPE_INT32, ints, 3);
    const char* strs[] = {"a", "b"};
    gguf_set_arr_str(ctx, "strs", strs, 2);
    ggml_context* tctx = ggml_init({ggml_tensor_overhead() * 2 + 64, nullptr, false});
    ggml_tensor* t = ggml_new_tensor_2d(tctx, GGML_TYPE_F32, 3, 2);
    ggml_set_name(t, "w");
    for (int i = 0; i < 6; ++i) static_cast<float*>(t->data)[i] = static_cast<float>(i);
    gguf_add_tensor(ctx, t);
    const std::string path = dir.file("sample.gguf");
    EXPECT_TRUE(gguf_write_to_file(ctx, path.c_str(), false));
    gguf_free(ctx);
    ggml_free(tctx);
    return path;
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "<no error>";
}

}  // namespace

TEST(GgufFile, ReadsTypedMetadataAndTensors) {
    TempDir dir;
    GgufFile f(write_sample(dir));
    EXPECT_EQ(f.meta().get_string("s"), "hello");
    EXPECT_EQ(f.meta().get_u32("u"), 7u);
    EXPECT_FLOAT_EQ(f.meta().get_f32("f"), 0.5f);
    EXPECT_TRUE(f.meta().get_bool("b"));
    EXPECT_EQ(f.meta().get_i32_array("ints"), (std::vector<int32_t>{1, 2, 3}));
    EXPECT_EQ(f.meta().get_string_array("strs"), (std::vector<std::string>{"a", "b"}));
    const auto& t = f.tensor("w", {3, 2});
    EXPECT_EQ(t.type, GGML_TYPE_F32);
    EXPECT_EQ(reinterpret_cast<const float*>(t.data)[5], 5.0f);
    EXPECT_EQ(f.meta().value_to_string("ints"), "[1, 2, 3]");
}

TEST(GgufFile, WrongTypeMissingKeyAndShapeMismatchAreNamed) {
    TempDir dir;
    GgufFile f(write_sample(dir));
    EXPECT_NE(error_of([&] { f.meta().get_u32("s"); }).find("metadata key 's' has type str, expected u32"), std::string::npos);
    EXPECT_NE(error_of([&] { f.meta().get_u32("nope"); }).find("missing metadata key 'nope'"), std::string::npos);
    EXPECT_NE(error_of([&] { f.meta().get_string_array("ints"); }).find("is not an array of str"), std::string::npos);
    EXPECT_NE(error_of([&] { f.tensor("w", {2, 3}); }).find("tensor 'w' has shape [3, 2], expected [2, 3]"), std::string::npos);
    EXPECT_NE(error_of([&] { f.tensor("v"); }).find("missing tensor 'v'"), std::string::npos);
}

TEST(GgufFile, TruncatedOrForeignFilesAreRejected) {
    TempDir dir;
    const std::string good = talkbox::testing::read_text(write_sample(dir));
    for (size_t cut : {size_t(0), size_t(3), size_t(20), size_t(100), good.size() / 2}) {
        const std::string path = dir.file("cut.gguf");
        talkbox::testing::write_text(path, good.substr(0, cut));
        const std::string err = error_of([&] { GgufFile f(path); });
        EXPECT_NE(err.find("is not a valid GGUF file"), std::string::npos) << "cut at " << cut << " of " << good.size() << ": " << err;
    }
    // Cut inside the tensor data (the file ends with 8 bytes of alignment padding).
    talkbox::testing::write_text(dir.file("cut.gguf"), good.substr(0, good.size() - 10));
    EXPECT_NE(error_of([&] { GgufFile f(dir.file("cut.gguf")); }).find("data of tensor 'w' lies past the end of the file"),
              std::string::npos);
    talkbox::testing::write_text(dir.file("text.gguf"), "this is not gguf at all");
    EXPECT_NE(error_of([&] { GgufFile f(dir.file("text.gguf")); }).find("is not a valid GGUF file"), std::string::npos);
    EXPECT_NE(error_of([&] { GgufFile f(dir.file("absent.gguf")); }).find("cannot open"), std::string::npos);
}
