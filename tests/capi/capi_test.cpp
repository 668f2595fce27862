// libtalkbox.so and its users: the C test program (capi_c_test.c) and the Python bindings' test
// against samples made here with the C++ API for the same requests (capi_cases.h), the exported
// symbols, and `cmake --install` + pkg-config + the C example as the README shows them.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "capi/capi_cases.h"
#include "convert/perth_checkpoint.h"
#include "support/test_support.h"
#include "talkbox/long_form.h"
#include "talkbox/model.h"

namespace talkbox {
namespace {

namespace fs = std::filesystem;
using namespace talkbox::testing;

std::string clip() { return fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav"; }

ModelOptions two_threads() {
    ModelOptions o;
    o.threads = 2;  // as the C and Python tests load them
    return o;
}

void write_f32(const std::string& path, const std::vector<float>& samples) {
    std::ofstream f(path, std::ios::binary);
    f.write(reinterpret_cast<const char*>(samples.data()), static_cast<std::streamsize>(samples.size() * sizeof(float)));
    ASSERT_TRUE(f.good()) << path;
}

std::vector<float> speak(Session& session, const SpeechRequest& request) {
    std::vector<float> out;
    session.speak(request, [&](const float* p, size_t n) { out.insert(out.end(), p, p + n); });
    return out;
}

SpeechRequest base_request() {
    SpeechRequest r;
    r.text = CASE_TEXT;
    r.sampling.seed = CASE_SEED;
    r.max_frames = CASE_MAX_FRAMES;
    return r;
}

// expected/*.f32: what talkbox::Session says for each case of capi_cases.h.
std::string make_expected(const TempDir& dir) {
    const std::string out = dir.file("expected");
    fs::create_directories(out);
    {
        const Model model(converted_fixture("tiny-0.6B-CustomVoice"), two_threads());
        Session session(model);
        SpeechRequest r = base_request();
        r.speaker = model.capabilities().speakers.at(0);
        write_f32(out + "/customvoice.f32", speak(session, r));

        r.text = CASE_LONG_TEXT;
        LongFormOptions lf;
        lf.segment_chars = 0;
        lf.pause_ms = CASE_LONG_PAUSE_MS;
        lf.parallel = 1;  // the C test runs them at once (the default) and one after another: both must match this
        const auto segments = long_form_segments(r.text, lf);
        EXPECT_EQ(segments.size(), 2u);
        std::vector<float> long_form;
        speak_long_form(session, r, segments, lf, [&](const float* p, size_t n) { long_form.insert(long_form.end(), p, p + n); });
        write_f32(out + "/long_form.f32", long_form);
    }
    {
        const Model model(converted_fixture("tiny-0.6B-Base"), two_threads());
        Session session(model);
        SpeechRequest r = base_request();
        r.voice = std::make_shared<Voice>(model.create_voice(clip(), std::nullopt));
        write_f32(out + "/base.f32", speak(session, r));
    }
    {
        const Model model(converted_chatterbox("multilingual"), two_threads());
        Session session(model);
        SpeechRequest r = base_request();
        r.max_frames = CASE_CHATTERBOX_MAX_FRAMES;
        write_f32(out + "/chatterbox.f32", speak(session, r));
    }
    return out;
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

TEST(CApi, CTestProgramMatchesTheCppSession) {
    TempDir dir;
    const std::string expected = make_expected(dir);
    // The random-weight Perth checkpoint of tests/data/perth (docs/watermark.md).
    const std::string perth = dir.file("perth.gguf");
    convert_perth_checkpoint(std::string(TALKBOX_SOURCE_DIR) + "/tests/data/perth/perth_tiny.pth.tar", perth);
    const auto r = run_program(TALKBOX_CAPI_C_TEST,
                               quoted(converted_fixture("tiny-0.6B-CustomVoice")) + " " + quoted(converted_fixture("tiny-0.6B-Base")) +
                                   " " + quoted(converted_chatterbox("multilingual")) + " " + quoted(clip()) + " " + quoted(expected) +
                                   " " + quoted(dir.path()) + " " + quoted(perth));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("checks passed"), std::string::npos) << r.out;
    EXPECT_EQ(r.err, "");
}

TEST(PythonBindings, MatchTheCppSession) {
    TempDir dir;
    const std::string expected = make_expected(dir);
    // Debian's python3 (with python3-numpy), not whatever python3 comes first on PATH.
    const std::string python = "env TALKBOX_LIBRARY=" + quoted(TALKBOX_SHARED_LIBRARY) + " PYTHONPATH=" +
                               quoted(std::string(TALKBOX_SOURCE_DIR) + "/bindings/python") + " /usr/bin/python3";
    const auto r = run_program(python, quoted(std::string(TALKBOX_SOURCE_DIR) + "/tests/capi/python_bindings_test.py") + " " +
                                           quoted(converted_fixture("tiny-0.6B-CustomVoice")) + " " +
                                           quoted(converted_fixture("tiny-0.6B-Base")) + " " + quoted(clip()) + " " +
                                           quoted(expected) + " " + quoted(dir.path()) + " " +
                                           quoted(converted_chatterbox("multilingual")));
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.err.find("OK"), std::string::npos) << r.err;  // unittest's summary
}

TEST(CApi, ExportsOnlyTalkboxSymbols) {
    const auto r = run_program("nm", "-D --defined-only " + quoted(TALKBOX_SHARED_LIBRARY));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::set<std::string> names;
    std::istringstream lines(r.out);
    for (std::string line; std::getline(lines, line);) {
        std::istringstream words(line);
        std::string address, type, name;
        words >> address >> type >> name;
        if (type == "A") continue;  // the version node TALKBOX_0
        EXPECT_EQ(name.rfind("talkbox_", 0), 0u) << "exported: " << line;
        names.insert(name.substr(0, name.find('@')));
    }
    // Every function the header declares, and nothing else.
    const std::string header = read_text(std::string(TALKBOX_SOURCE_DIR) + "/include/talkbox/talkbox.h");
    std::set<std::string> declared;
    for (size_t at = header.find("TALKBOX_API "); at != std::string::npos; at = header.find("TALKBOX_API ", at + 1)) {
        const size_t paren = header.find('(', at);
        size_t start = paren;
        while (start > 0 && (std::isalnum(static_cast<unsigned char>(header[start - 1])) || header[start - 1] == '_')) --start;
        const std::string name = header.substr(start, paren - start);
        if (name.rfind("talkbox_", 0) == 0) declared.insert(name);
    }
    EXPECT_GT(declared.size(), 40u);
    EXPECT_EQ(names, declared);
}

// The README's "C library" block, run as written in a fresh folder: paths map to the build, the
// source tree and a fixture model; $HOME is that folder.
TEST(CApi, ReadmeInstallAndExamplesRun) {
    const std::string readme = read_text(std::string(TALKBOX_SOURCE_DIR) + "/README.md");
    const size_t section = readme.find("## C library and Python");
    ASSERT_NE(section, std::string::npos);
    const size_t begin = readme.find("```sh\n", section), end = readme.find("```\n", begin + 6);
    ASSERT_NE(begin, std::string::npos);
    std::string block = readme.substr(begin + 6, end - begin - 6);
    const auto replace = [&](const std::string& from, const std::string& to) {
        for (size_t p = block.find(from); p != std::string::npos; p = block.find(from, p + to.size())) block.replace(p, from.size(), to);
    };
    replace("cmake --install build", quoted(TALKBOX_CMAKE_COMMAND) + " --install " + quoted(TALKBOX_BUILD_DIR));
    replace(" examples/", " " + std::string(TALKBOX_SOURCE_DIR) + "/examples/");
    replace("=bindings/python", "=" + std::string(TALKBOX_SOURCE_DIR) + "/bindings/python");
    replace(" python3 ", " /usr/bin/python3 ");
    replace("customvoice.gguf", converted_fixture("tiny-0.6B-CustomVoice"));
    TempDir dir;
    write_text(dir.file("readme.sh"), "set -euo pipefail\nexport HOME=" + quoted(dir.path()) + "\n" + block);
    const auto r = run_program("bash", quoted(dir.file("readme.sh")), dir.path());
    ASSERT_EQ(r.exit_code, 0) << block << "\n" << r.out << r.err;
    // What the install put in place, and nothing of ggml's.
    EXPECT_TRUE(fs::exists(dir.file(".local/include/talkbox/talkbox.h")));
    EXPECT_TRUE(fs::exists(dir.file(".local/lib/pkgconfig/talkbox.pc")));
    EXPECT_TRUE(fs::exists(dir.file(".local/lib/libtalkbox.so")));
    EXPECT_FALSE(fs::exists(dir.file(".local/include/ggml.h")));
    for (const char* out : {"hello-c.wav", "hello-py.wav"}) EXPECT_TRUE(fs::exists(dir.file(out))) << out;
    EXPECT_NE(r.out.find("s of audio"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace talkbox
