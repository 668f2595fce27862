// `talkbox pull`, `talkbox list` and hub names in other commands, run as a user runs them, against
// the fake hub on 127.0.0.1 (HF_ENDPOINT) with the cache in a temporary folder (TALKBOX_HOME).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "hub/fake_hub.h"
#include "support/test_support.h"
#include "support/tiny_turbo.h"

namespace fs = std::filesystem;
using talkbox::testing::FakeHub;
using talkbox::testing::run_talkbox;
using talkbox::testing::TempDir;

namespace {

const std::string kRepo = "Qwen/Qwen3-TTS-12Hz-0.6B-Base";
const std::string kChatterbox = "ResembleAI/chatterbox", kTurbo = "ResembleAI/chatterbox-turbo", kNano = "ResembleAI/chatterbox-nano";
const std::string kPack = "ResembleAI/Chatterbox-Multilingual-pt-br";

class PullCli : public ::testing::Test {
protected:
    void SetUp() override {
        hub_.add_repo(kRepo, talkbox::testing::qwen_fixture("tiny-0.6B-Base"));
        // The Chatterbox repositories as released: both variants' files (and files no loader reads) in one.
        hub_.add_repo(kChatterbox, talkbox::testing::chatterbox_fixture("tiny-multilingual"));
        hub_.add_file(kChatterbox, "README.md", "# Chatterbox\n");
        hub_.add_file(kChatterbox, "t3_23lang.safetensors", std::string(4096, 'x'));
        hub_.add_repo(kTurbo, talkbox::testing::tiny_turbo_folder());
        hub_.add_file(kTurbo, "special_tokens_map.json", "{}");
        // A single-language pack as ResembleAI/Chatterbox-Multilingual-pt-br ships it: its own T3
        // name, the v3 S3Gen and the tokenizer (no voice encoder, built-in voice or Cangjie table).
        const std::string fixture = talkbox::testing::chatterbox_fixture("tiny-multilingual");
        for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{
                 {"t3_mtl23ls_v2.safetensors", "t3_pt_br.safetensors"}, {"s3gen.pt", "s3gen_v3.pt"},
                 {"grapheme_mtl_merged_expanded_v1.json", "grapheme_mtl_merged_expanded_v1.json"}, {"tiny_hparams.json", "tiny_hparams.json"}}) {
            fs::copy_file(fixture + "/" + from, pack_files_.file(to));
        }
        hub_.add_repo(kPack, pack_files_.path());
        hub_.add_file(kPack, "README.md", "# Chatterbox Multilingual pt-BR\n");
        hub_.add_repo(kNano, talkbox::testing::tiny_nano_folder());
        hub_.add_file(kNano, "special_tokens_map.json", "{}");
        hub_.add_file(kNano, "README.md", "# Chatterbox Nano\n");
        setenv("HF_ENDPOINT", hub_.endpoint().c_str(), 1);
        setenv("TALKBOX_HOME", home_.path().c_str(), 1);
        unsetenv("HF_TOKEN");
    }
    void TearDown() override {
        unsetenv("HF_ENDPOINT");
        unsetenv("TALKBOX_HOME");
    }

    // The repository files `pull` fetched (resolve requests), by path.
    std::set<std::string> fetched(const std::string& repo) const {
        std::set<std::string> files;
        const std::string prefix = "/" + repo + "/resolve/" + hub_.commit(repo) + "/";
        for (const auto& r : hub_.requests_for(prefix)) files.insert(r.path.substr(prefix.size()));
        return files;
    }

    TempDir pack_files_;
    FakeHub hub_;
    TempDir home_;
};

// What ChatterboxMultilingualTTS.from_local / ChatterboxTTS.from_local / ChatterboxTurboTTS.from_local
// (nano=False / True) read (README "Chatterbox"), plus the fixtures' tiny_hparams.json that convert reads when it is there.
const std::set<std::string> kMultilingualFiles = {"t3_mtl23ls_v2.safetensors", "s3gen.pt", "ve.pt", "conds.pt",
                                                  "grapheme_mtl_merged_expanded_v1.json", "Cangjie5_TC.json", "tiny_hparams.json"};
const std::set<std::string> kEnglishFiles = {"t3_cfg.safetensors", "s3gen.safetensors", "ve.safetensors", "conds.pt",
                                             "tokenizer.json", "tiny_hparams.json"};
const std::set<std::string> kTurboFiles = {"t3_turbo_v1.safetensors", "s3gen_meanflow.safetensors", "ve.safetensors", "conds.pt",
                                           "vocab.json", "merges.txt", "added_tokens.json", "tiny_hparams.json"};
const std::set<std::string> kNanoFiles = {"t3_nano_v1.safetensors", "s3gen_meanflow.safetensors", "ve.safetensors", "conds.pt",
                                          "vocab.json", "merges.txt", "added_tokens.json", "tiny_hparams.json"};

TEST_F(PullCli, ChatterboxMultilingualByDefaultDownloadsOnlyItsFiles) {
    const std::string model = home_.path() + "/models/ResembleAI--chatterbox-f16.gguf";
    const auto p = run_talkbox("pull " + kChatterbox);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_EQ(p.out, model + "\n");
    EXPECT_EQ(fetched(kChatterbox), kMultilingualFiles);
    EXPECT_NE(p.err.find("pulled " + kChatterbox + " at commit " + hub_.commit(kChatterbox).substr(0, 12) + ": 7 files downloaded"),
              std::string::npos)
        << p.err;
    const auto i = run_talkbox("info " + kChatterbox);
    ASSERT_EQ(i.exit_code, 0) << i.err;
    EXPECT_NE(i.out.find("variant:      multilingual"), std::string::npos) << i.out;
    const auto again = run_talkbox("pull " + kChatterbox + " --variant multilingual");  // the default variant, by name
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(again.out, model + "\n");
    EXPECT_NE(again.err.find(kChatterbox + " is up to date"), std::string::npos) << again.err;
}

TEST_F(PullCli, ChatterboxEnglishVariantIsItsOwnModel) {
    const std::string model = home_.path() + "/models/ResembleAI--chatterbox@english-q8_0.gguf";
    const auto p = run_talkbox("pull " + kChatterbox + " --variant english --type q8_0");
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_EQ(p.out, model + "\n");
    EXPECT_EQ(fetched(kChatterbox), kEnglishFiles);
    EXPECT_NE(p.err.find("pulled " + kChatterbox + "@english at commit"), std::string::npos) << p.err;
    const auto i = run_talkbox("info " + kChatterbox + "@english");
    ASSERT_EQ(i.exit_code, 0) << i.err;
    EXPECT_NE(i.out.find("variant:      english"), std::string::npos) << i.out;
    EXPECT_NE(i.out.find("name:         chatterbox@english"), std::string::npos) << i.out;
    const auto l = run_talkbox("list");
    EXPECT_NE(l.out.find(kChatterbox + "@english  q8_0"), std::string::npos) << l.out;
    // Only the English model is cached: the plain name is not it.
    const auto plain = run_talkbox("info " + kChatterbox);
    EXPECT_EQ(plain.exit_code, 1);
    EXPECT_NE(plain.err.find("run `talkbox pull " + kChatterbox + "` first"), std::string::npos) << plain.err;
}

// mtl_tts's t3_model="v3": the same files with t3_mtl23ls_v3.safetensors, a model of its own
// beside the default v2 one.
TEST_F(PullCli, ChatterboxV3IsItsOwnModel) {
    const std::string fixture = talkbox::testing::chatterbox_fixture("tiny-multilingual");
    std::ifstream weights(fixture + "/t3_mtl23ls_v2.safetensors", std::ios::binary);
    hub_.add_file(kChatterbox, "t3_mtl23ls_v3.safetensors", std::string(std::istreambuf_iterator<char>(weights), {}));
    const std::string model = home_.path() + "/models/ResembleAI--chatterbox@multilingual_v3-f16.gguf";
    const auto p = run_talkbox("pull " + kChatterbox + " --t3-model v3");
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_EQ(p.out, model + "\n");
    std::set<std::string> v3_files = kMultilingualFiles;
    v3_files.erase("t3_mtl23ls_v2.safetensors");
    v3_files.insert("t3_mtl23ls_v3.safetensors");
    EXPECT_EQ(fetched(kChatterbox), v3_files);
    EXPECT_NE(p.err.find("pulled " + kChatterbox + "@multilingual_v3 at commit"), std::string::npos) << p.err;
    const auto s = run_talkbox("speak -m " + kChatterbox + "@multilingual_v3 --language en -t Hi. --max-frames 4 -o " +
                               home_.file("v3.wav"));
    EXPECT_EQ(s.exit_code, 0) << s.err;
    // v2 stays the plain name; a T3 choice means the multilingual files, and takes v2 or v3.
    const auto v2 = run_talkbox("pull " + kChatterbox + " --t3-model v2");
    ASSERT_EQ(v2.exit_code, 0) << v2.err;
    EXPECT_EQ(v2.out, home_.path() + "/models/ResembleAI--chatterbox-f16.gguf\n");
    const auto turbo = run_talkbox("pull " + kTurbo + " --t3-model v3");
    EXPECT_EQ(turbo.exit_code, 1);
    EXPECT_NE(turbo.err.find("is missing the multilingual T3 weights: 't3_mtl23ls_v3.safetensors' does not exist"),
              std::string::npos)
        << turbo.err;
    const auto other = run_talkbox("pull " + kChatterbox + " --t3-model v4");
    EXPECT_NE(other.exit_code, 0);
    EXPECT_NE(other.err.find("--t3-model"), std::string::npos) << other.err;
}

// A language pack's voice encoder, built-in voice and Cangjie table come from ResembleAI/chatterbox
// (as the pack's users assemble it for ChatterboxMultilingualTTS.from_local).
TEST_F(PullCli, ChatterboxLanguagePackTakesTheRestFromTheBaseRepository) {
    const std::string pack = kPack;
    const std::string model = home_.path() + "/models/ResembleAI--Chatterbox-Multilingual-pt-br-f16.gguf";
    const auto p = run_talkbox("pull " + pack);
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_EQ(p.out, model + "\n");
    EXPECT_EQ(fetched(pack), (std::set<std::string>{"t3_pt_br.safetensors", "s3gen_v3.pt", "grapheme_mtl_merged_expanded_v1.json",
                                                    "tiny_hparams.json"}));
    EXPECT_EQ(fetched(kChatterbox), (std::set<std::string>{"ve.pt", "conds.pt", "Cangjie5_TC.json"}));
    EXPECT_NE(p.err.find("7 files downloaded"), std::string::npos) << p.err;
    const auto i = run_talkbox("info " + pack);
    ASSERT_EQ(i.exit_code, 0) << i.err;
    EXPECT_NE(i.out.find("variant:      multilingual"), std::string::npos) << i.out;
    EXPECT_NE(i.out.find("t3_pt_br.safetensors"), std::string::npos) << i.out;
    const auto s = run_talkbox("speak -m " + pack + " --language pt -t 'Olá.' --max-frames 4 -o " + home_.file("pt.wav"));
    EXPECT_EQ(s.exit_code, 0) << s.err;
    EXPECT_NE(run_talkbox("pull " + pack).err.find(pack + " is up to date"), std::string::npos);
}

TEST_F(PullCli, ChatterboxTurboDownloadsOnlyItsFiles) {
    const auto p = run_talkbox("pull " + kTurbo + " --type f32");
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_EQ(p.out, home_.path() + "/models/ResembleAI--chatterbox-turbo-f32.gguf\n");
    EXPECT_EQ(fetched(kTurbo), kTurboFiles);
    const auto i = run_talkbox("info " + kTurbo);
    ASSERT_EQ(i.exit_code, 0) << i.err;
    EXPECT_NE(i.out.find("variant:      turbo"), std::string::npos) << i.out;
}

TEST_F(PullCli, ChatterboxNanoDownloadsOnlyItsFiles) {
    const auto p = run_talkbox("pull " + kNano + " --type q8_0");
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_EQ(p.out, home_.path() + "/models/ResembleAI--chatterbox-nano-q8_0.gguf\n");
    EXPECT_EQ(fetched(kNano), kNanoFiles);
    const auto i = run_talkbox("info " + kNano);
    ASSERT_EQ(i.exit_code, 0) << i.err;
    EXPECT_NE(i.out.find("variant:      nano"), std::string::npos) << i.out;
    EXPECT_NE(i.out.find("GPT-2, 3 layers, hidden 48"), std::string::npos) << i.out;
    const auto s = run_talkbox("speak -m " + kNano + " -t 'Hi.' --max-frames 4 -o " + home_.file("nano.wav"));
    EXPECT_EQ(s.exit_code, 0) << s.err;
    // The Turbo checkpoint is not in the Nano repository.
    const auto turbo = run_talkbox("pull " + kNano + " --variant turbo");
    EXPECT_EQ(turbo.exit_code, 1);
    EXPECT_NE(turbo.err.find("is missing the turbo T3 weights"), std::string::npos) << turbo.err;
}

TEST_F(PullCli, VariantsThatDoNotApplyAreRefusedBeforeDownloading) {
    const auto qwen = run_talkbox("pull " + kRepo + " --variant english");
    EXPECT_EQ(qwen.exit_code, 1);
    EXPECT_NE(qwen.err.find("--variant english does not apply: repository '" + kRepo + "' at commit"),
              std::string::npos)
        << qwen.err;
    const auto bad = run_talkbox("pull " + kChatterbox + " --variant klingon");
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.err.find("unknown Chatterbox variant 'klingon' (choose multilingual, english, turbo or nano)"), std::string::npos)
        << bad.err;
    const auto turbo = run_talkbox("pull " + kChatterbox + " --variant turbo");  // that repository has no Turbo T3
    EXPECT_EQ(turbo.exit_code, 1);
    EXPECT_NE(turbo.err.find("repository '" + kChatterbox + "' at commit " + hub_.commit(kChatterbox).substr(0, 12) +
                             " is missing the turbo T3 weights: 't3_turbo_v1.safetensors' does not exist"),
              std::string::npos)
        << turbo.err;
    EXPECT_TRUE(hub_.requests_for("/resolve/").empty());
}

TEST_F(PullCli, HelpListsPullAndList) {
    const auto r = run_talkbox("--help");
    EXPECT_EQ(r.exit_code, 0);
    for (const char* cmd : {"pull", "list"}) EXPECT_NE(r.out.find(cmd), std::string::npos) << cmd;
    for (const char* cmd : {"pull", "list"}) {
        const auto h = run_talkbox(std::string(cmd) + " --help");
        EXPECT_EQ(h.exit_code, 0) << cmd;
        EXPECT_NE(h.out.find("Usage: talkbox " + std::string(cmd)), std::string::npos) << h.out;
        EXPECT_NE(h.out.find("TALKBOX_HOME"), std::string::npos) << h.out;
    }
    EXPECT_NE(run_talkbox("pull --help").out.find("HF_TOKEN"), std::string::npos);
}

TEST_F(PullCli, PullThenListThenInfoByName) {
    const std::string model = home_.path() + "/models/Qwen--Qwen3-TTS-12Hz-0.6B-Base-q8_0.gguf";
    const auto p = run_talkbox("pull " + kRepo + " --type q8_0");
    ASSERT_EQ(p.exit_code, 0) << p.err;
    EXPECT_EQ(p.out, model + "\n");  // only the path on stdout, for scripts
    EXPECT_NE(p.err.find("pulled " + kRepo + " at commit " + hub_.commit(kRepo).substr(0, 12) + ": 9 files downloaded"),
              std::string::npos)
        << p.err;
    EXPECT_EQ(p.err.find('\r'), std::string::npos) << "no progress bar when stderr is not a terminal";

    const auto l = run_talkbox("list");
    ASSERT_EQ(l.exit_code, 0) << l.err;
    for (const std::string& want : std::vector<std::string>{"MODEL", "TYPE", "SIZE", "PATH", kRepo, "q8_0", "MiB", model}) {
        EXPECT_NE(l.out.find(want), std::string::npos) << "missing '" << want << "' in:\n" << l.out;
    }

    const auto i = run_talkbox("info " + kRepo);
    ASSERT_EQ(i.exit_code, 0) << i.err;
    EXPECT_NE(i.out.find("model:        " + model), std::string::npos) << i.out;
    EXPECT_NE(i.out.find("name:         Qwen3-TTS-12Hz-0.6B-Base"), std::string::npos) << i.out;

    const auto again = run_talkbox("pull " + kRepo + " --type q8_0");
    ASSERT_EQ(again.exit_code, 0) << again.err;
    EXPECT_EQ(again.out, model + "\n");
    EXPECT_NE(again.err.find(kRepo + " is up to date"), std::string::npos) << again.err;
}

TEST_F(PullCli, ListOnAnEmptyCache) {
    const auto l = run_talkbox("list");
    EXPECT_EQ(l.exit_code, 0);
    EXPECT_EQ(l.out, "");
    EXPECT_NE(l.err.find("no models in " + home_.path() + "/models yet: run `talkbox pull"), std::string::npos) << l.err;
}

TEST_F(PullCli, FailuresExitNonZeroWithTheReason) {
    const auto missing = run_talkbox("pull Qwen/no-such-model");
    EXPECT_EQ(missing.exit_code, 1);
    EXPECT_NE(missing.err.find("talkbox: error: repository 'Qwen/no-such-model' not found or gated: set HF_TOKEN"),
              std::string::npos)
        << missing.err;

    const auto bad = run_talkbox("pull ../etc");
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.err.find("invalid repository id '../etc'"), std::string::npos) << bad.err;

    const auto type = run_talkbox("pull " + kRepo + " --type q2");
    EXPECT_EQ(type.exit_code, 1);
    EXPECT_NE(type.err.find("unknown weight type 'q2'"), std::string::npos) << type.err;

    const auto info = run_talkbox("info Qwen/not-pulled");
    EXPECT_EQ(info.exit_code, 1);
    EXPECT_NE(info.err.find("run `talkbox pull Qwen/not-pulled` first"), std::string::npos) << info.err;

    hub_.stall("model.safetensors");
    const auto stalled = run_talkbox("pull " + kRepo + " --timeout 1");
    EXPECT_EQ(stalled.exit_code, 1);
    EXPECT_NE(stalled.err.find("nothing received for 1 s"), std::string::npos) << stalled.err;
    EXPECT_FALSE(fs::exists(home_.path() + "/models/Qwen--Qwen3-TTS-12Hz-0.6B-Base-f16.gguf"));
}

// The README's `talkbox ...` lines (its hub section) run as written, against the fake hub.
TEST_F(PullCli, ReadmeHubCommandsRun) {
    const std::string readme = talkbox::testing::read_text(std::string(TALKBOX_SOURCE_DIR) + "/README.md");
    size_t ran = 0;
    for (size_t pos = 0; (pos = readme.find("\ntalkbox ", pos)) != std::string::npos;) {
        const size_t end = readme.find('\n', pos + 1);
        const std::string args = readme.substr(pos + 9, end - pos - 9);
        pos = end;
        // The tiny Chatterbox never emits its stop token: cap its 1000 speech tokens per sentence.
        const std::string run = args.rfind("speak ", 0) == 0 ? "speak --max-frames 4 " + args.substr(6) : args;
        const auto r = run_talkbox(run, home_.path());
        EXPECT_EQ(r.exit_code, 0) << "README command failed: talkbox " << args << "\n" << r.err;
        ++ran;
    }
    EXPECT_GE(ran, 8u);
    for (const char* out : {"hello.wav", "default.wav", "default_model"}) EXPECT_TRUE(fs::exists(home_.path() + "/" + out)) << out;
    EXPECT_EQ(talkbox::testing::read_text(home_.path() + "/default_model"), kChatterbox + "@english\n");
}

}  // namespace
