// Shared helpers for the test suite: fixture paths, temporary folders, safetensors builders,
// running the talkbox binary.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

// Whether this build runs under AddressSanitizer (the TALKBOX_FUZZ build runs several suites):
// it reserves terabytes of shadow memory (no RLIMIT_AS) and keeps freed memory in a quarantine
// (peak RSS says nothing about the code's own buffering).
#if defined(__SANITIZE_ADDRESS__)
#define TALKBOX_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TALKBOX_TEST_ASAN 1
#endif
#endif
namespace talkbox::testing {

#ifdef TALKBOX_TEST_ASAN
inline constexpr bool kUnderAsan = true;
#else
inline constexpr bool kUnderAsan = false;
#endif

// ../shared/fixtures (or $TALKBOX_FIXTURES). Throws when absent: tests never skip silently.
std::string fixtures_dir();
std::string qwen_fixture(const std::string& name);  // fixtures/qwen3tts/<name>

// A fixture checkpoint converted to GGUF once per test process (cached in a process-wide temp
// folder); returns the GGUF path. `type` is a talkbox weight type name ("f32", "q8_0", ...).
std::string converted_fixture(const std::string& name, const std::string& type = "f32");


// fixtures/chatterbox/<name> (e.g. "tiny-multilingual", "goldens/t3/README.md").
std::string chatterbox_fixture(const std::string& name);

// The tiny Chatterbox folder converted once per test process: variant "multilingual" or "english".
std::string converted_chatterbox(const std::string& variant = "multilingual", const std::string& type = "f32");

// The five tiny Qwen3-TTS checkpoints.
const std::vector<std::string>& qwen_checkpoints();

class TempDir {
public:
    TempDir();
    ~TempDir();
    const std::string& path() const { return path_; }
    std::string file(const std::string& name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

struct RawTensor {
    std::string name;
    std::string dtype;
    std::vector<int64_t> shape;
    std::vector<uint8_t> bytes;
};

// Serialises tensors into the safetensors layout (optional raw JSON header to simulate lies).
std::vector<uint8_t> make_safetensors(const std::vector<RawTensor>& tensors);
std::vector<uint8_t> make_safetensors_with_header(const std::string& header_json, size_t data_bytes);

void write_file(const std::string& path, const std::vector<uint8_t>& bytes);
void write_text(const std::string& path, const std::string& text);
std::string read_text(const std::string& path);

// Copies a snapshot folder (following symlinks) so a test can corrupt its copy.
void copy_tree(const std::string& from, const std::string& to);

// A little-endian float32 .npy array (the goldens' format); throws on anything else.
struct NpyArray {
    std::vector<int64_t> shape;
    std::vector<float> data;
};
NpyArray load_npy(const std::string& path);

// Largest |a[i] - b[i]|; the sizes must match (throws otherwise).
float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b);
float max_abs(const std::vector<float>& a);
double cosine(const std::vector<float>& a, const std::vector<float>& b);  // sizes must match

struct CommandResult {
    int exit_code;
    std::string out;  // stdout
    std::string err;  // stderr
};
// Runs `binary` with the given shell-quoted argument string (in `cwd` when given).
CommandResult run_program(const std::string& binary, const std::string& args, const std::string& cwd = "");
// The same for build/bin/talkbox.
CommandResult run_talkbox(const std::string& args, const std::string& cwd = "");

}  // namespace talkbox::testing
