// libFuzzer target for Tokenizer::encode. The vocabulary comes from TALKBOX_FUZZ_MODEL: a talkbox
// GGUF, or a snapshot folder (vocab.json, merges.txt, ...) read as `talkbox convert` reads it, so
// that CI needs no converted model. Beyond "no crash, no sanitizer report" it checks that bad input
// only ever fails as InvalidArgument, that every id is in range, and that encoding the decoded text
// gives the same ids again (decode undoes encode up to NFC, and NFC text is its own normal form).
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "convert/tokenizer_meta.h"
#include "core/gguf_file.h"
#include "talkbox/error.h"
#include "text/tokenizer.h"

namespace {

const talkbox::Tokenizer* tokenizer = nullptr;

[[noreturn]] void fail(const std::string& why) {
    std::fprintf(stderr, "tokenizer_fuzz: %s\n", why.c_str());
    std::abort();
}

talkbox::Tokenizer load(const std::string& path) {
    if (!std::filesystem::is_directory(path)) return talkbox::Tokenizer::from_gguf(talkbox::GgufFile(path).meta());
    const std::unique_ptr<gguf_context, void (*)(gguf_context*)> ctx(gguf_init_empty(), gguf_free);
    talkbox::write_tokenizer_metadata(ctx.get(), path);
    return talkbox::Tokenizer::from_gguf(talkbox::GgufMeta(ctx.get(), path));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    const char* path = std::getenv("TALKBOX_FUZZ_MODEL");
    if (!path || !*path) {
        std::fprintf(stderr, "tokenizer_fuzz: set TALKBOX_FUZZ_MODEL to a talkbox GGUF or a snapshot folder\n");
        std::exit(2);
    }
    try {
        static const talkbox::Tokenizer loaded = load(path);
        tokenizer = &loaded;
    } catch (const talkbox::Error& e) {
        std::fprintf(stderr, "tokenizer_fuzz: %s\n", e.what());
        std::exit(2);
    }
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::vector<int32_t> ids;
    try {
        ids = tokenizer->encode(text);
    } catch (const talkbox::Error& e) {
        if (e.kind() != talkbox::ErrorKind::InvalidArgument) fail(std::string("unexpected error: ") + e.what());
        return 0;
    }
    for (const int32_t id : ids) {
        if (id < 0 || static_cast<size_t>(id) >= tokenizer->vocab_size()) {
            fail("id out of range: " + std::to_string(id));
        }
    }
    if (tokenizer->encode(tokenizer->decode(ids)) != ids) fail("encode(decode(ids)) differs from ids");
    return 0;
}
