// The talkbox binary as a user runs it: help on every command, convert + info, clear failures.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <sstream>

#include "server/serve_process.h"
#include "support/test_support.h"
#include "support/tiny_turbo.h"

namespace fs = std::filesystem;
using talkbox::testing::run_talkbox;
using talkbox::testing::TempDir;

TEST(Cli, HelpListsEveryCommand) {
    const auto r = run_talkbox("--help");
    EXPECT_EQ(r.exit_code, 0);
    for (const char* cmd : {"convert", "info", "speak", "decode", "encode", "voice", "pull", "list", "default", "serve", "tokenize", "bench"}) EXPECT_NE(r.out.find(cmd), std::string::npos) << cmd;
}

TEST(Cli, EveryCommandHasHelp) {
    for (const char* cmd : {"convert", "info", "speak", "decode", "encode", "voice", "pull", "list", "default", "serve", "tokenize", "bench"}) {
        const auto r = run_talkbox(std::string(cmd) + " --help");
        EXPECT_EQ(r.exit_code, 0) << cmd;
        EXPECT_NE(r.out.find("Usage: talkbox " + std::string(cmd)), std::string::npos) << r.out;
    }
}

// The help describes both families where both apply (it once said pull and voice were Qwen3-TTS only).
TEST(Cli, HelpDescribesWhatExists) {
    const auto top = run_talkbox("--help");
    for (const char* want : {"pull                        Download a Qwen3-TTS or Chatterbox model",
                             "voice                       Make and inspect cloned voices (.voice files) for Qwen3-TTS Base and Chatterbox",
                             "default                     Choose the model that speak and serve use without -m",
                             "encode                      Encode audio into Qwen3-TTS codec frames"}) {
        EXPECT_NE(top.out.find(want), std::string::npos) << "missing '" << want << "' in:\n" << top.out;
    }
    const auto pull = run_talkbox("pull --help");
    for (const char* want : {"ResembleAI/chatterbox, ResembleAI/chatterbox-turbo, ResembleAI/chatterbox-nano", "--variant", "ORG/NAME@VARIANT",
                             "Downloads only the files conversion reads", "HF_TOKEN"}) {
        EXPECT_NE(pull.out.find(want), std::string::npos) << "missing '" << want << "' in:\n" << pull.out;
    }
    const auto voice = run_talkbox("voice create --help");
    for (const char* want : {"A Qwen3-TTS Base or a Chatterbox model", "Chatterbox: the clip alone (no --ref-text)"}) {
        EXPECT_NE(voice.out.find(want), std::string::npos) << "missing '" << want << "' in:\n" << voice.out;
    }
    const auto speak = run_talkbox("speak --help");
    EXPECT_EQ(speak.out.find("-m,--model TEXT REQUIRED"), std::string::npos) << "-m is optional now:\n" << speak.out;
    const auto decode = run_talkbox("decode --help");
    for (const char* want : {"--voice", "--ref-audio", "--seed", "[[speech token], ...]} (Chatterbox)"}) {
        EXPECT_NE(decode.out.find(want), std::string::npos) << "missing '" << want << "' in:\n" << decode.out;
    }
}

TEST(Cli, NoCommandIsAnError) {
    const auto r = run_talkbox("");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("subcommand"), std::string::npos) << r.err;
}

TEST(Cli, ConvertThenInfo) {
    TempDir tmp;
    const std::string out = tmp.file("cv.gguf");
    const auto c = run_talkbox("convert " + talkbox::testing::qwen_fixture("tiny-1.7B-CustomVoice") + " -o " + out + " --type q8_0");
    ASSERT_EQ(c.exit_code, 0) << c.err;
    EXPECT_NE(c.err.find("Qwen3-TTS 1.7b custom_voice"), std::string::npos) << c.err;
    const auto i = run_talkbox("info " + out);
    ASSERT_EQ(i.exit_code, 0) << i.err;
    for (const char* want : {"variant:      custom_voice (CustomVoice)", "size:         1.7b", "weight type:  q8_0", "talker", "code predictor",
                             "codec decoder", "codec encoder", "dylan (beijing_dialect)", "eric (sichuan_dialect)", "vivian",
                             "languages:    auto, ", "english", "q8_0×"}) {
        EXPECT_NE(i.out.find(want), std::string::npos) << "missing '" << want << "' in:\n" << i.out;
    }
}

TEST(Cli, ChatterboxConvertInfoTokenize) {
    TempDir tmp;
    const std::string out = tmp.file("cb.gguf");
    const auto c = run_talkbox("convert " + talkbox::testing::chatterbox_fixture("tiny-multilingual") + " -o " + out + " --type q8_0");
    ASSERT_EQ(c.exit_code, 0) << c.err;
    EXPECT_NE(c.err.find("Chatterbox 64-wide T3 multilingual, 1493 tensors"), std::string::npos) << c.err;
    const auto i = run_talkbox("info " + out);
    ASSERT_EQ(i.exit_code, 0) << i.err;
    for (const char* want : {"family:       Chatterbox", "variant:      multilingual", "weight type:  q8_0", "T3   ", "S3Gen flow",
                             "HiFT vocoder", "S3 tokenizer", "CAMPPlus", "voice encoder", "built-in voice",
                             "T3:           2 layers, hidden 64, 4 heads of 16",
                             "voice:        built-in (speaker embedding, 88 prompt speech tokens, 175 reference mel frames)",
                             "languages:    auto, ar, da, de, el, en, es, fi, fr, he, hi, it, ja, ko, ms, nl, no, pl, pt, ru, sv, sw, tr, zh"}) {
        EXPECT_NE(i.out.find(want), std::string::npos) << "missing '" << want << "' in:\n" << i.out;
    }
    // The fr golden (goldens/t3/fr_e05_c05/case.json).
    const auto t = run_talkbox("tokenize " + out + " 'Bonjour... ça va? C'\\''est très bien' --language fr");
    ASSERT_EQ(t.exit_code, 0) << t.err;
    EXPECT_NE(t.out.find("normalized:   Bonjour,  ça va? C'est très bien.\n"), std::string::npos) << t.out;
    EXPECT_NE(t.out.find("ids:          255 711 11 22 21 18 68 25 6 2 2 12 34 10 2 29 10 9 2 12 5 67 27 2 27 25 14 32 26 2 72 8 0\n"),
              std::string::npos) << t.out;
    const auto zh = run_talkbox("tokenize " + out + " '你好世界。' -l zh");
    ASSERT_EQ(zh.exit_code, 0) << zh.err;
    EXPECT_NE(zh.err.find("note: zh: words are not segmented"), std::string::npos) << zh.err;
    // ja: kanji read with MeCab + IPAdic (pykakasi also reads 日本 as にっぽん); without the dictionary, a precise error.
    const auto ja = run_talkbox("tokenize " + out + " '日本' -l ja");
    ASSERT_EQ(ja.exit_code, 0) << ja.err;
    EXPECT_NE(ja.out.find("preprocessed: [ja]に\xE3\x81\xA3\xE3\x81\xBB\xE3\x82\x9Aん.\n"), std::string::npos) << ja.out;  // NFKD: ほ + U+309A
    EXPECT_NE(ja.err.find("note: ja: kanji are read with MeCab and IPAdic"), std::string::npos) << ja.err;
    const std::string without_dictionary = "TALKBOX_MECAB_DICDIR=" + tmp.file("no-ipadic") + " " TALKBOX_BINARY;
    const auto no_dic = talkbox::testing::run_program(without_dictionary, "tokenize " + out + " '日本' -l ja");
    EXPECT_EQ(no_dic.exit_code, 1);
    EXPECT_NE(no_dic.err.find("talkbox: error: Japanese kanji readings need MeCab's IPAdic dictionary, which is not in '" +
                              tmp.file("no-ipadic") + "' (no sys.dic)"),
              std::string::npos) << no_dic.err;
    const auto kana = talkbox::testing::run_program(without_dictionary, "tokenize " + out + " 'こんにちは' -l ja");
    EXPECT_EQ(kana.exit_code, 0) << kana.err;  // kana need no dictionary
    const auto help = run_talkbox("tokenize --help");
    for (const char* want : {"pykakasi", "pkuseg", "dicta_onnx", "russian_text_stresser"}) {
        EXPECT_NE(help.out.find(want), std::string::npos) << want;
    }
    const auto en = run_talkbox("convert " + talkbox::testing::chatterbox_fixture("tiny-multilingual") + " -o " +
                                tmp.file("en.gguf") + " --variant english");
    ASSERT_EQ(en.exit_code, 0) << en.err;
    const auto fr_en = run_talkbox("tokenize " + tmp.file("en.gguf") + " hello -l fr");
    EXPECT_EQ(fr_en.exit_code, 1);
    EXPECT_NE(fr_en.err.find("the English Chatterbox model speaks English only"), std::string::npos) << fr_en.err;
    const auto qwen = run_talkbox("tokenize " + talkbox::testing::converted_fixture("tiny-0.6B-Base") + " hello");
    EXPECT_EQ(qwen.exit_code, 1);
    EXPECT_NE(qwen.err.find("'qwen3tts' models have none to show (it takes 'chatterbox' models)"), std::string::npos) << qwen.err;
    // Parts a family does not have (Family's optional hooks) are refused naming the families that do.
    const auto encode = run_talkbox("encode -m " + out + " " + talkbox::testing::fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav -o " +
                                    tmp.file("codes.json"));
    EXPECT_EQ(encode.exit_code, 1);
    EXPECT_NE(encode.err.find("'chatterbox' models have no codes to encode audio into (encode takes 'qwen3tts' models)"),
              std::string::npos)
        << encode.err;
    EXPECT_FALSE(fs::exists(tmp.file("codes.json")));
    const auto bad_variant = run_talkbox("convert " + talkbox::testing::qwen_fixture("tiny-0.6B-Base") + " -o " +
                                         tmp.file("q.gguf") + " --variant english");
    EXPECT_EQ(bad_variant.exit_code, 1);
    EXPECT_NE(bad_variant.err.find("--variant english does not apply: '" + talkbox::testing::qwen_fixture("tiny-0.6B-Base") +
                                   "' is a Qwen3-TTS checkpoint"),
              std::string::npos)
        << bad_variant.err;
}

TEST(Cli, ConvertFailureExitsNonZeroWithTheReason) {
    TempDir tmp;
    const auto r = run_talkbox("convert " + tmp.path() + " -o " + tmp.file("x.gguf"));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("talkbox: error: '" + tmp.path() + "' holds no checkpoint talkbox converts (a Qwen3-TTS snapshot has "
                         "config.json"),
              std::string::npos)
        << r.err;
    EXPECT_FALSE(fs::exists(tmp.file("x.gguf")));
}

TEST(Cli, BadTypeIsRejected) {
    TempDir tmp;
    const auto r = run_talkbox("convert " + talkbox::testing::qwen_fixture("tiny-0.6B-Base") + " -o " + tmp.file("x.gguf") +
                               " --type q2");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("unknown weight type 'q2'"), std::string::npos) << r.err;
}

TEST(Cli, InfoOnAFileThatIsNotAModel) {
    TempDir tmp;
    talkbox::testing::write_text(tmp.file("junk.gguf"), "GGUF but not really");
    const auto r = run_talkbox("info " + tmp.file("junk.gguf"));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("is not a valid GGUF file"), std::string::npos) << r.err;
}

// Every `build/bin/talkbox ...` line of the README runs as written (paths mapped to fixtures).
// Every `build/bin/talkbox ...` line of the README runs in one folder, in order. `talkbox serve`
// starts in the background (on a free port instead of the one shown) and the `curl` lines after it
// run against it.
TEST(Cli, ReadmeCommandsRun) {
    const std::string readme = talkbox::testing::read_text(std::string(TALKBOX_SOURCE_DIR) + "/README.md");
    ASSERT_FALSE(readme.empty());
    TempDir tmp;
    talkbox::testing::write_text(tmp.file("story.txt"), "Once upon a time. The end.");
    // The README's story.ssml, as it shows it.
    const size_t ssml_at = readme.find("```xml\n<speak>");
    ASSERT_NE(ssml_at, std::string::npos) << "README: the story.ssml example";
    talkbox::testing::write_text(tmp.file("story.ssml"), readme.substr(ssml_at + 7, readme.find("\n```", ssml_at + 7) - ssml_at - 7));
    // The README's scene.txt (a dialogue script), likewise.
    const size_t scene_at = readme.find("```text\nALICE:");
    ASSERT_NE(scene_at, std::string::npos) << "README: the scene.txt example";
    talkbox::testing::write_text(tmp.file("scene.txt"), readme.substr(scene_at + 8, readme.find("\n```", scene_at + 8) - scene_at - 7));
    std::unique_ptr<talkbox::testing::ServeProcess> server;
    size_t ran = 0, curls = 0;
    std::istringstream lines(readme);
    for (std::string line; std::getline(lines, line);) {
        const bool talkbox = line.rfind("build/bin/talkbox ", 0) == 0, curl = line.rfind("curl ", 0) == 0;
        if (!talkbox && !curl) continue;
        std::string args = talkbox ? line.substr(18) : line;
        const auto replace = [&](const std::string& from, const std::string& to) {
            for (size_t p = args.find(from); p != std::string::npos; p = args.find(from, p + to.size())) args.replace(p, from.size(), to);
        };
        // A pipe to a player runs without the player: the output is captured instead.
        if (args.find(" | ") != std::string::npos) args = args.substr(0, args.find(" | "));
        replace("path/to/Qwen3-TTS-12Hz-0.6B-Base", talkbox::testing::qwen_fixture("tiny-0.6B-Base"));
        replace("path/to/Qwen3-TTS-12Hz-0.6B-CustomVoice", talkbox::testing::qwen_fixture("tiny-0.6B-CustomVoice"));
        replace("path/to/Qwen3-TTS-12Hz-1.7B-VoiceDesign", talkbox::testing::qwen_fixture("tiny-1.7B-VoiceDesign"));
        replace("path/to/chatterbox-turbo", talkbox::testing::tiny_turbo_folder());
        replace("path/to/chatterbox-nano", talkbox::testing::tiny_nano_folder());
        replace("path/to/chatterbox", talkbox::testing::chatterbox_fixture("tiny-multilingual"));
        replace(" ref.wav", " " + talkbox::testing::fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav");
        // The tiny Chatterbox's random weights never emit the stop token: cap the official 1000
        // speech tokens per sentence so that the README's speak commands stay fast here.
        replace("speak -m chatterbox.gguf ", "speak -m chatterbox.gguf --max-frames 8 ");
        replace("speak -m turbo.gguf ", "speak -m turbo.gguf --max-frames 8 ");
        replace("speak -m nano.gguf ", "speak -m nano.gguf --max-frames 8 ");
        replace(R"("model": "chatterbox", )", R"("model": "chatterbox", "max_frames": 8, )");  // the same through the server
        replace("@ref.wav", "@" + talkbox::testing::fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav");
        ++ran;
        if (talkbox && args.rfind("serve ", 0) == 0) {
            std::vector<std::string> argv;
            std::istringstream words(args.substr(6));
            for (std::string w; words >> w;) {
                if (w == "--port") {
                    words >> w;  // ServeProcess picks a free port
                } else if (w == "--wyoming-port") {
                    words >> w;  // any free port, as for HTTP
                    argv.insert(argv.end(), {"--wyoming-port", "0"});
                } else {
                    argv.push_back(w);
                }
            }
            server = std::make_unique<talkbox::testing::ServeProcess>(argv, tmp.path());
            continue;
        }
        if (curl) {
            ASSERT_TRUE(server) << "a README curl line before `talkbox serve`: " << line;
            replace("127.0.0.1:8080", "127.0.0.1:" + std::to_string(server->port()));
            const auto r = talkbox::testing::run_command("cd " + tmp.path() + " && " + args + " >/dev/null", 120);
            EXPECT_EQ(r.exit_code, 0) << "README command failed: " << args << "\n" << r.out << "\nserver log:\n" << server->log();
            ++curls;
            continue;
        }
        const auto r = run_talkbox(args, tmp.path());
        EXPECT_EQ(r.exit_code, 0) << "README command failed: talkbox " << args << "\n" << r.err;
    }
    EXPECT_GE(ran, 20u);
    EXPECT_GE(curls, 4u);
    for (const char* out : {"hello.wav", "story.wav", "designed.wav", "seeded.wav", "codes.json", "decoded.wav", "decoded.flac", "fox.voice",
                            "cloned.wav", "quick.wav", "ref-codes.json", "chatterbox.gguf", "chatterbox-en.gguf", "server.mp3",
                            "fox.wav", "voices/fox.voice", "bonjour.wav", "chatterbox-clone.wav", "turbo.gguf", "turbo.wav", "nano.gguf", "nano.wav",
                            "voices/anna.voice", "anna.wav", "faster.wav", "events.txt", "hello.aac", "tokens.json", "spoken.wav",
                            "tokens.wav", "whole.wav", "story-ssml.wav", "ssml.wav", "scene.wav", "story.srt", "story-captioned.wav", "timed.json"}) {
        EXPECT_TRUE(fs::exists(tmp.file(out))) << out;
    }
    if (server) EXPECT_EQ(server->stop(), 0) << server->log();
}
