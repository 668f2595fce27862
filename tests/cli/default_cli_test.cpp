// The model commands use without -m: `talkbox default`, $TALKBOX_MODEL, the only cached model, and
// `talkbox serve` without -m, each branch run as a user runs it with the cache in a temporary
// folder (TALKBOX_HOME). Cached models are the tiny converted fixtures copied under the names
// `talkbox pull` gives them (pull itself is tested in pull_cli_test).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "server/serve_process.h"
#include "support/test_support.h"

namespace fs = std::filesystem;
using talkbox::testing::run_talkbox;
using talkbox::testing::TempDir;

namespace {

const std::string kMultilingual = "ResembleAI/chatterbox";
const std::string kEnglish = "ResembleAI/chatterbox@english";
// An English model refuses French: which model spoke shows in the answer.
const std::string kFrench = " --language fr --max-frames 4 -t Bonjour. -o out.wav";
const std::string kRefusedByEnglish = "this English Chatterbox model speaks only 'en'";

class DefaultModel : public ::testing::Test {
protected:
    void SetUp() override {
        setenv("TALKBOX_HOME", home_.path().c_str(), 1);
        unsetenv("TALKBOX_MODEL");
        fs::create_directories(home_.path() + "/models");
    }
    void TearDown() override {
        unsetenv("TALKBOX_HOME");
        unsetenv("TALKBOX_MODEL");
    }
    void cache(const std::string& variant, const std::string& file) const {
        fs::copy_file(talkbox::testing::converted_chatterbox(variant), home_.path() + "/models/" + file);
    }
    void cache_both() const {
        cache("multilingual", "ResembleAI--chatterbox-f32.gguf");
        cache("english", "ResembleAI--chatterbox@english-f32.gguf");
    }
    talkbox::testing::CommandResult speak(const std::string& args) const { return run_talkbox("speak" + args, work_.path()); }

    TempDir home_, work_;
};

TEST_F(DefaultModel, EmptyCacheSaysWhichPullToRun) {
    for (const char* cmd : {"speak -t Hello -o out.wav", "default", "serve"}) {
        const auto r = run_talkbox(cmd, work_.path());
        EXPECT_EQ(r.exit_code, 1) << cmd;
        EXPECT_NE(r.err.find("talkbox: error: no model given (-m) and none in the cache (" + home_.path() +
                             "/models): run `talkbox pull ResembleAI/chatterbox` first"),
                  std::string::npos)
            << cmd << ": " << r.err;
    }
    EXPECT_FALSE(fs::exists(work_.file("out.wav")));
}

TEST_F(DefaultModel, TheOnlyCachedModelSpeaks) {
    cache("english", "ResembleAI--chatterbox@english-f32.gguf");
    const auto d = run_talkbox("default");
    ASSERT_EQ(d.exit_code, 0) << d.err;
    EXPECT_EQ(d.out, kEnglish + "\n");
    EXPECT_NE(d.err.find("(the only model in the cache)"), std::string::npos) << d.err;

    const auto r = speak(" -t Hello. --max-frames 4 -o out.wav");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(fs::exists(work_.file("out.wav")));
    const auto fr = speak(kFrench);
    EXPECT_EQ(fr.exit_code, 1);
    EXPECT_NE(fr.err.find(kRefusedByEnglish), std::string::npos) << fr.err;
}

TEST_F(DefaultModel, SeveralCachedListsThemAndHowToChoose) {
    cache_both();
    for (const char* cmd : {"speak -t Hello -o out.wav", "default"}) {
        const auto r = run_talkbox(cmd, work_.path());
        EXPECT_EQ(r.exit_code, 1) << cmd;
        EXPECT_NE(r.err.find("no model given (-m) and 2 models in the cache, none of them the default:\n  " + kMultilingual +
                             "\n  " + kEnglish + "\nchoose one with `talkbox default " + kMultilingual +
                             "` (or -m NAME, or $TALKBOX_MODEL)"),
                  std::string::npos)
            << cmd << ": " << r.err;
    }
}

TEST_F(DefaultModel, DefaultCommandChoosesAndEnvironmentOverrides) {
    cache_both();
    const auto set = run_talkbox("default " + kEnglish);
    ASSERT_EQ(set.exit_code, 0) << set.err;
    EXPECT_NE(set.err.find("the default model is now " + kEnglish), std::string::npos) << set.err;
    EXPECT_EQ(talkbox::testing::read_text(home_.path() + "/default_model"), kEnglish + "\n");

    const auto shown = run_talkbox("default");
    ASSERT_EQ(shown.exit_code, 0) << shown.err;
    EXPECT_EQ(shown.out, kEnglish + "\n");
    EXPECT_NE(shown.err.find("(set by `talkbox default`, stored in " + home_.path() + "/default_model)"), std::string::npos)
        << shown.err;
    EXPECT_NE(speak(kFrench).err.find(kRefusedByEnglish), std::string::npos);  // the English model spoke

    // $TALKBOX_MODEL (this shell) goes before the stored choice; -m before both.
    setenv("TALKBOX_MODEL", kMultilingual.c_str(), 1);
    const auto env = run_talkbox("default");
    ASSERT_EQ(env.exit_code, 0) << env.err;
    EXPECT_EQ(env.out, kMultilingual + "\n");
    EXPECT_NE(env.err.find("(from $TALKBOX_MODEL)"), std::string::npos) << env.err;
    const auto multi = speak(kFrench);
    EXPECT_EQ(multi.exit_code, 0) << multi.err;
    const auto explicit_m = speak(" -m " + kEnglish + kFrench);
    EXPECT_NE(explicit_m.err.find(kRefusedByEnglish), std::string::npos) << explicit_m.err;
    const auto note = run_talkbox("default " + kEnglish);
    EXPECT_NE(note.err.find("note: $TALKBOX_MODEL (" + kMultilingual + ") is set and takes precedence"), std::string::npos)
        << note.err;

    // A default that no longer resolves says so, naming where it came from.
    setenv("TALKBOX_MODEL", "ResembleAI/gone", 1);
    const auto gone = speak(" -t Hello -o out.wav");
    EXPECT_EQ(gone.exit_code, 1);
    EXPECT_NE(gone.err.find("the default model 'ResembleAI/gone' (from $TALKBOX_MODEL): model 'ResembleAI/gone' is not in the "
                            "cache"),
              std::string::npos)
        << gone.err;
    unsetenv("TALKBOX_MODEL");

    const auto clear = run_talkbox("default --clear");
    ASSERT_EQ(clear.exit_code, 0) << clear.err;
    EXPECT_NE(clear.err.find("the default model is forgotten"), std::string::npos) << clear.err;
    EXPECT_FALSE(fs::exists(home_.path() + "/default_model"));
    EXPECT_EQ(run_talkbox("default").exit_code, 1);  // two cached again, no choice
}

TEST_F(DefaultModel, DefaultRefusesWhatDoesNotResolveAndTakesFiles) {
    cache_both();
    const auto bad = run_talkbox("default ResembleAI/not-pulled");
    EXPECT_EQ(bad.exit_code, 1);
    EXPECT_NE(bad.err.find("model 'ResembleAI/not-pulled' is not in the cache (" + home_.path() +
                           "/models): run `talkbox pull ResembleAI/not-pulled` first"),
              std::string::npos)
        << bad.err;
    const auto variant = run_talkbox("default ResembleAI/chatterbox@turbo");
    EXPECT_NE(variant.err.find("run `talkbox pull ResembleAI/chatterbox --variant turbo` first"), std::string::npos) << variant.err;
    EXPECT_FALSE(fs::exists(home_.path() + "/default_model"));

    // A file is stored by its absolute path, so that it works from any folder.
    fs::copy_file(talkbox::testing::converted_chatterbox("english"), work_.file("en.gguf"));
    const auto file = run_talkbox("default en.gguf", work_.path());
    ASSERT_EQ(file.exit_code, 0) << file.err;
    EXPECT_EQ(talkbox::testing::read_text(home_.path() + "/default_model"), work_.file("en.gguf") + "\n");
    EXPECT_NE(run_talkbox("speak" + kFrench, home_.path()).err.find(kRefusedByEnglish), std::string::npos);
}

TEST_F(DefaultModel, ServeWithoutModelServesEveryCachedModelDefaultFirst) {
    cache_both();
    ASSERT_EQ(run_talkbox("default " + kEnglish).exit_code, 0);
    talkbox::testing::ServeProcess server({"--voices-dir", work_.file("voices")});
    EXPECT_NE(server.log().find("serving 2 models"), std::string::npos) << server.log();
    const auto models = talkbox::testing::run_command("curl -fsS " + server.url() + "/v1/models", 30);
    ASSERT_EQ(models.exit_code, 0) << models.out;
    const size_t en = models.out.find("\"" + kEnglish + "\""), multi = models.out.find("\"" + kMultilingual + "\"");
    EXPECT_NE(en, std::string::npos) << models.out;
    EXPECT_NE(multi, std::string::npos) << models.out;
    EXPECT_LT(en, multi) << "the default model is listed (and answers) first: " << models.out;
    EXPECT_EQ(server.stop(), 0) << server.log();
}

}  // namespace
