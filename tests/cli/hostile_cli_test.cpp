// Hostile and careless command lines (issue 31): numbers that are not numbers, and output paths
// that are devices, FIFOs, folders, missing folders or the same file twice. Every case checks the
// exit status, the message, and that nothing was written or replaced.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <thread>

#include "support/test_support.h"
#include "talkbox/audio.h"

using namespace talkbox::testing;
namespace fs = std::filesystem;

namespace {

const std::string kSpeak = " -t 'Hello there.' --speaker ryan --seed 3 --max-frames 4 -q";

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

struct stat stat_of(const std::string& path) {
    struct stat st{};
    EXPECT_EQ(::lstat(path.c_str(), &st), 0) << path;
    return st;
}

unsigned mode_of(const std::string& path) { return stat_of(path).st_mode & 0777; }

// The folder's entries, to show that a refused run left nothing behind.
std::vector<std::string> entries(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
    std::sort(out.begin(), out.end());
    return out;
}

// A character device of our own (major, minor as /dev/null 1:3, /dev/full 1:7), so that a
// regression replaces a node in a temporary folder, never the system's; the system's node where
// nodes cannot be made (unprivileged, which cannot replace /dev's either).
std::string device(const TempDir& dir, const std::string& name, unsigned minor) {
    const std::string path = dir.file(name);
    if (::mknod(path.c_str(), S_IFCHR | 0666, makedev(1, minor)) == 0) return path;
    return "/dev/" + name;
}

// Reads a FIFO on a thread while the command writes it; join() returns what came through. A
// command that never opened the FIFO does not leave the reader hanging: join() opens it for
// writing once (without blocking), which gives the reader its end of file.
class FifoReader {
public:
    explicit FifoReader(std::string path) : path_(std::move(path)) {
        EXPECT_EQ(::mkfifo(path_.c_str(), 0600), 0);
        thread_ = std::thread([this] { data_ = read_text(path_); });
    }
    std::string join() {
        const int fd = ::open(path_.c_str(), O_WRONLY | O_NONBLOCK);
        if (fd >= 0) ::close(fd);
        thread_.join();
        return data_;
    }

private:
    std::string path_, data_;
    std::thread thread_;
};

class HostileCli : public ::testing::Test {
protected:
    static std::string model() { return converted_fixture("tiny-0.6B-CustomVoice"); }
    static std::string speak(const std::string& args) { return "speak -m " + model() + kSpeak + " " + args; }
    TempDir dir_;
};

// ---- Class 2: numbers that are not numbers

TEST_F(HostileCli, SpeakSeedMinusOneIsRefusedNotWrapped) {
    const auto r = run_talkbox(speak("--seed -1 -o " + dir_.file("a.wav")));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(contains(r.err, "--seed: must be a whole number in [0, 18446744073709551615], got '-1'")) << r.err;
    EXPECT_TRUE(entries(dir_.path()).empty());
}

TEST_F(HostileCli, NormalizeDbMustBeAFiniteLevel) {
    for (const char* db : {"nan", "inf", "-1e30", "3", "1e400"}) {
        const auto r = run_talkbox(speak("--normalize peak --normalize-db " + std::string(db) + " -o " + dir_.file("n.wav")));
        EXPECT_EQ(r.exit_code, 1) << db;
        EXPECT_TRUE(contains(r.err, "--normalize-db: must be a number in [-70, 0], got '" + std::string(db) + "'")) << r.err;
        EXPECT_TRUE(entries(dir_.path()).empty()) << db;
    }
    // The ends of the range are levels.
    const auto r = run_talkbox(speak("--normalize loudness --normalize-db -70 -o " + dir_.file("quiet.wav")));
    EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST_F(HostileCli, SpeakNumericFlagsOutOfRange) {
    const struct {
        const char* args;
        const char* message;
    } cases[] = {
        {"-T -1", "--threads: must be a whole number in [0, 4096], got '-1'"},
        {"--decoder-threads 99999", "--decoder-threads: must be a whole number in [0, 4096], got '99999'"},
        {"--chunk 0", "--chunk: must be a whole number in [1, 1000], got '0'"},
        {"--first-chunk 2.5", "--first-chunk: must be a whole number in [0, 1000], got '2.5'"},
        {"--pause-ms 1e12", "--pause-ms: must be a whole number in [0, 3600000], got '1e12'"},
        {"--top-k -1", "--top-k: must be a whole number in [0, 4294967295], got '-1'"},
        {"--max-frames 4294967296", "--max-frames: must be a whole number in [0, 4294967295], got '4294967296'"},
        {"--stall-frames nan", "--stall-frames: must be a whole number in [0, 4294967295], got 'nan'"},
        {"--parallel 65", "--parallel: must be a whole number in [0, 64], got '65'"},
        {"--segment-chars -3", "--segment-chars: must be a whole number in [0, 4294967295], got '-3'"},
        {"--speed nan", "--speed must be between 0.25 and 4.0 (1 = the model's own pace), not a non-finite number"},
    };
    for (const auto& c : cases) {
        const auto r = run_talkbox(speak(std::string(c.args) + " -o " + dir_.file("x.wav")));
        EXPECT_EQ(r.exit_code, 1) << c.args << "\n" << r.err;
        EXPECT_TRUE(contains(r.err, c.message)) << c.args << "\n" << r.err;
        EXPECT_TRUE(entries(dir_.path()).empty()) << c.args;
    }
}

// Sampling settings have the model's ranges; a NaN is outside every range.
TEST_F(HostileCli, SamplingSettingsThatAreNotNumbers) {
    for (const auto& [flag, name] : std::vector<std::pair<std::string, std::string>>{
             {"--temperature", "temperature"}, {"--top-p", "top_p"}, {"--repetition-penalty", "repetition_penalty"},
             {"--subtalker-temperature", "subtalker_temperature"}}) {
        const auto r = run_talkbox(speak(flag + " nan -o " + dir_.file("x.wav")));
        EXPECT_EQ(r.exit_code, 1) << flag;
        EXPECT_TRUE(contains(r.err, name + " must be ")) << flag << ": " << r.err;
        EXPECT_TRUE(contains(r.err, "nan")) << flag << ": " << r.err;  // "nan" or "-nan", as the C++ library prints it
        EXPECT_TRUE(entries(dir_.path()).empty()) << flag;
    }
}

TEST_F(HostileCli, DecodeSeedAndThreadsOutOfRange) {
    const std::string codes = fixtures_dir() + "/qwen3tts/goldens/decoder/decode_40/codes.json";
    for (const auto& [args, message] : std::vector<std::pair<std::string, std::string>>{
             {"--seed -1", "--seed: must be a whole number in [0, 18446744073709551615], got '-1'"},
             {"-t -2", "--threads: must be a whole number in [0, 4096], got '-2'"}}) {
        const auto r = run_talkbox("decode " + codes + " -m " + model() + " " + args + " -o " + dir_.file("d.wav"));
        EXPECT_EQ(r.exit_code, 1) << args;
        EXPECT_TRUE(contains(r.err, message)) << r.err;
        EXPECT_TRUE(entries(dir_.path()).empty()) << args;
    }
}

// Audio read in (encode's input) with samples that are not numbers or absurd ones is refused.
TEST_F(HostileCli, EncodeRefusesSamplesThatAreNotNumbers) {
    for (const auto& [value, message] : std::vector<std::pair<float, std::string>>{
             {std::nanf(""), "holds a non-finite sample at index 100"},
             {1e30f, "holds a sample of 1e+30 at index 100, beyond the accepted [-16, 16] (+24 dBFS)"}}) {
        std::vector<float> pcm(24000, 0.1f);
        std::string bytes;
        {
            const auto wav = talkbox::audio::encode_audio(pcm, 24000, talkbox::audio::SampleFormat::Wav32);
            bytes.assign(wav.begin(), wav.end());
        }
        std::memcpy(&bytes[bytes.size() - 4 * (pcm.size() - 100)], &value, 4);  // sample 100
        const std::string clip = dir_.file("clip.wav");
        write_text(clip, bytes);
        const auto r = run_talkbox("encode " + clip + " -m " + model() + " -o " + dir_.file("codes.json"));
        EXPECT_EQ(r.exit_code, 1);
        EXPECT_TRUE(contains(r.err, message)) << r.err;
        EXPECT_EQ(entries(dir_.path()), std::vector<std::string>{"clip.wav"});
    }
}

// ---- Class 3: output files

TEST_F(HostileCli, OutputToAFifoIsWrittenInPlace) {
    const std::string fifo = dir_.file("audio.fifo");
    FifoReader reader(fifo);
    const auto r = run_talkbox(speak("-o " + fifo));
    const std::string got = reader.join();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(S_ISFIFO(stat_of(fifo).st_mode)) << "the FIFO was replaced";
    ASSERT_GT(got.size(), 44u);
    EXPECT_EQ(got.substr(0, 4), "RIFF");
    EXPECT_EQ(entries(dir_.path()), std::vector<std::string>{"audio.fifo"});
}

TEST_F(HostileCli, OutputToACharacterDeviceIsWrittenInPlace) {
    const std::string null = device(dir_, "null", 3);
    const auto r = run_talkbox(speak("-o " + null + " --format mp3"));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(S_ISCHR(stat_of(null).st_mode)) << null << " was replaced by a regular file";
    for (const auto& e : entries(dir_.path())) EXPECT_EQ(e.find(".tmp-"), std::string::npos) << "temporary file left: " << e;
}

TEST_F(HostileCli, WriteErrorOnADeviceFails) {
    const std::string full = device(dir_, "full", 7);
    const auto r = run_talkbox(speak("-o " + full));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(contains(r.err, "cannot write '" + full + "': No space left on device")) << r.err;
    EXPECT_TRUE(S_ISCHR(stat_of(full).st_mode));
}

TEST_F(HostileCli, NewFilesFollowTheUmask) {
    const mode_t old = ::umask(027);
    auto r = run_talkbox(speak("-o " + dir_.file("a.wav") + " --codes-out " + dir_.file("a.json")));
    ::umask(002);
    const auto r2 = run_talkbox(speak("-o " + dir_.file("b.wav")));
    ::umask(old);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_EQ(r2.exit_code, 0) << r2.err;
    EXPECT_EQ(mode_of(dir_.file("a.wav")), 0640u);
    EXPECT_EQ(mode_of(dir_.file("a.json")), 0640u);
    EXPECT_EQ(mode_of(dir_.file("b.wav")), 0664u);
}

TEST_F(HostileCli, ReplacedFilesKeepTheirMode) {
    const std::string out = dir_.file("keep.wav");
    write_text(out, "old");
    ASSERT_EQ(::chmod(out.c_str(), 0604), 0);
    const auto r = run_talkbox(speak("-o " + out));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(mode_of(out), 0604u);
    EXPECT_EQ(read_text(out).substr(0, 4), "RIFF");
}

// A symbolic link to a file: the file is replaced, the link stays a link.
TEST_F(HostileCli, OutputThroughASymbolicLinkReplacesItsTarget) {
    const std::string target = dir_.file("target.wav"), link = dir_.file("link.wav");
    write_text(target, "old");
    fs::create_symlink(target, link);
    const auto r = run_talkbox(speak("-o " + link));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(fs::is_symlink(link));
    EXPECT_EQ(read_text(target).substr(0, 4), "RIFF");
}

TEST_F(HostileCli, CodesOutIntoAMissingFolderFailsBeforeAnyWork) {
    const std::string audio = dir_.file("a.wav"), codes = dir_.file("missing/codes.json");
    const auto r = run_talkbox(speak("-o " + audio + " --codes-out " + codes));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(contains(r.err, "--codes-out: cannot write '" + codes + "': the folder '" + dir_.file("missing") + "' does not exist"))
        << r.err;
    EXPECT_TRUE(entries(dir_.path()).empty()) << "the audio was left behind";
}

TEST_F(HostileCli, OneFileForAudioAndCodesIsRefused) {
    const std::string f = dir_.file("both");
    write_text(f, "precious");
    for (const std::string& codes : {f, dir_.path() + "/./both"}) {
        const auto r = run_talkbox(speak("-o " + f + " --codes-out " + codes));
        EXPECT_EQ(r.exit_code, 1);
        EXPECT_TRUE(contains(r.err, "-o and --codes-out name the same file")) << r.err;
        EXPECT_EQ(read_text(f), "precious");
        EXPECT_EQ(entries(dir_.path()), std::vector<std::string>{"both"});
    }
}

// An input named as an output would be replaced by what is made from it.
TEST_F(HostileCli, SpeakRefusesToReplaceItsTextFile) {
    const std::string text = dir_.file("story.txt");
    write_text(text, "Hello there.");
    const auto r = run_talkbox("speak -m " + model() + " --speaker ryan -q -f " + text + " --codes-out " + text);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(contains(r.err, "-f and --codes-out name the same file ('" + text + "')")) << r.err;
    EXPECT_EQ(read_text(text), "Hello there.");
    EXPECT_EQ(entries(dir_.path()), std::vector<std::string>{"story.txt"});
}

TEST_F(HostileCli, OutputThatIsAFolderIsRefused) {
    fs::create_directory(dir_.file("folder"));
    const auto r = run_talkbox(speak("-o " + dir_.file("folder")));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(contains(r.err, "-o: cannot write '" + dir_.file("folder") + "': it is a folder")) << r.err;
    EXPECT_TRUE(fs::is_directory(dir_.file("folder")));
    EXPECT_TRUE(fs::is_empty(dir_.file("folder")));
}

TEST_F(HostileCli, DecodeChecksItsOutputBeforeDecoding) {
    const std::string codes = fixtures_dir() + "/qwen3tts/goldens/decoder/decode_40/codes.json";
    const std::string out = dir_.file("no/such/out.wav");
    const auto r = run_talkbox("decode " + codes + " -m " + model() + " -o " + out);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(contains(r.err, "-o: cannot write '" + out + "': the folder '" + dir_.file("no/such") + "' does not exist")) << r.err;
    EXPECT_TRUE(entries(dir_.path()).empty());
}

TEST_F(HostileCli, EncodeRefusesToReplaceItsInput) {
    const std::string clip = dir_.file("clip.wav");
    fs::copy_file(fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav", clip);
    const std::string before = read_text(clip);
    const auto r = run_talkbox("encode " + clip + " -m " + model() + " -o " + clip);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(contains(r.err, "the audio and -o name the same file")) << r.err;
    EXPECT_EQ(read_text(clip), before);
    EXPECT_EQ(entries(dir_.path()), std::vector<std::string>{"clip.wav"});
}

TEST_F(HostileCli, VoiceCreateAndConvertCheckTheirOutputFirst) {
    const std::string voice = dir_.file("gone/v.voice");
    auto r = run_talkbox("voice create -m /nonexistent.gguf --ref-audio " + fixtures_dir() + "/qwen3tts/audio/en_3p5s.wav" +
                         " --x-vector-only -o " + voice);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(contains(r.err, "-o: cannot write '" + voice + "'")) << r.err;
    EXPECT_FALSE(contains(r.err, "nonexistent.gguf")) << "the model was read before the output was checked: " << r.err;
    const std::string gguf = dir_.file("gone/m.gguf");
    r = run_talkbox("convert " + qwen_fixture("tiny-0.6B-CustomVoice") + " -o " + gguf);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_TRUE(contains(r.err, "-o: cannot write '" + gguf + "': the folder")) << r.err;
    EXPECT_TRUE(entries(dir_.path()).empty());
}

}  // namespace

// ---- Class 1: input files read under the text limit

class HostileCliText : public HostileCli {
protected:
    // speak with the text from ARGS (-t or -f), into dir_/out.wav.
    CommandResult speak_text(const std::string& args) {
        return run_talkbox("speak -m " + model() + " --speaker ryan --seed 3 --max-frames 4 -q " + args + " -o " + dir_.file("out.wav"));
    }
    void expect_refused(const CommandResult& r, const std::string& message, const std::vector<std::string>& left = {}) {
        EXPECT_EQ(r.exit_code, 1) << r.err;
        EXPECT_TRUE(contains(r.err, message)) << r.err;
        EXPECT_FALSE(contains(r.err, "internal error")) << r.err;
        EXPECT_EQ(entries(dir_.path()), left) << "a refused run wrote something";
    }
};

TEST_F(HostileCliText, AnEndlessTextFileStopsAtTheLimit) {
    const auto r = speak_text("-f /dev/zero");
    expect_refused(r, "text file '/dev/zero' (-f) holds more than 1000000 characters, the most speak takes at once");
}

TEST_F(HostileCliText, ATextFileThatIsAFolderIsNamed) {
    fs::create_directory(dir_.file("notes"));
    expect_refused(speak_text("-f " + dir_.file("notes")), "text file '" + dir_.file("notes") + "' (-f) is a folder, not a file", {"notes"});
}

TEST_F(HostileCliText, ATextFileOverTheLimitIsRefusedWithItsPath) {
    write_text(dir_.file("long.txt"), std::string(1000001, 'a'));
    expect_refused(speak_text("-f " + dir_.file("long.txt")), "text file '" + dir_.file("long.txt") + "' (-f) holds more than 1000000 characters",
                   {"long.txt"});
}

TEST_F(HostileCliText, EndlessStdinStopsAtTheLimit) {
    TempDir logs;
    const std::string command = "head -c 20000000 /dev/zero | " + std::string(TALKBOX_BINARY) + " speak -m " + model() +
                                " --speaker ryan -q -o " + dir_.file("out.wav") + " 2>" + logs.file("err");
    const int status = std::system(command.c_str());
    const std::string err = read_text(logs.file("err"));
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 1) << err;
    EXPECT_TRUE(contains(err, "stdin holds more than 1000000 characters")) << err;
    EXPECT_TRUE(entries(dir_.path()).empty());
}

// ---- Class 5: text with nothing to say, refused before any synthesis

TEST_F(HostileCliText, TextWithNothingToSayIsRefused) {
    const struct {
        const char* what;
        std::string text;
    } cases[] = {
        {"zero-width spaces", "\u200b\u200b"},
        {"a byte order mark", "\ufeff"},
        {"bidi controls", "\u202e\u2066\u2069\u202c"},
        {"C0 controls", "\x01\x07\x1b"},
        {"no-break and ideographic spaces", "\u00a0\u3000 \t"},
        {"line and paragraph separators", "\u2028\u2029"},
    };
    for (const auto& c : cases) {
        write_text(dir_.file("t.txt"), c.text);
        const auto r = speak_text("-f " + dir_.file("t.txt"));
        SCOPED_TRACE(c.what);
        expect_refused(r, "the text to speak is empty: it holds nothing to say", {"t.txt"});
    }
}

TEST_F(HostileCliText, ANulInsideTheTextIsRefusedWithItsOffset) {
    write_text(dir_.file("t.txt"), std::string("Hello\0there.", 12));
    expect_refused(speak_text("-f " + dir_.file("t.txt")), "the text to speak holds a NUL character at byte offset 5", {"t.txt"});
}
