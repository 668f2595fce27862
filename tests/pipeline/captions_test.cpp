// Captions files from segment timings: SubRip, WebVTT and JSON, and the format by extension.
#include <gtest/gtest.h>

#include "talkbox/captions.h"
#include "talkbox/error.h"

using namespace talkbox;

namespace {

// 24 kHz: 0 → 1.5 s, then 1.8 s → 3723.0005 s (an hour, two minutes, 3 s; rounds to 3723.001).
const std::vector<Caption> kCaptions = {{"First  sentence.\nStill first.", "", 0, 36000},
                                        {"A < b & c --> d.", "vivian", 43200, 89352012}};

// Why caption_format refuses `path`, or "(taken)".
std::string refusal(const std::string& path) {
    try {
        caption_format(path, "--captions");
        return "(taken)";
    } catch (const Error& e) {
        return e.what();
    }
}

}  // namespace

TEST(Captions, SubRip) {
    EXPECT_EQ(captions_text(kCaptions, 24000, CaptionFormat::Srt),
              "1\n00:00:00,000 --> 00:00:01,500\nFirst sentence. Still first.\n\n"
              "2\n00:00:01,800 --> 01:02:03,001\nA < b & c --> d.\n\n");
}

TEST(Captions, WebVtt) {
    EXPECT_EQ(captions_text(kCaptions, 24000, CaptionFormat::Vtt),
              "WEBVTT\n\n00:00:00.000 --> 00:00:01.500\nFirst sentence. Still first.\n\n"
              "00:00:01.800 --> 01:02:03.001\nA &lt; b &amp; c --&gt; d.\n\n");
}

TEST(Captions, Json) {
    EXPECT_EQ(captions_text(kCaptions, 24000, CaptionFormat::Json),
              "[{\"text\":\"First  sentence.\\nStill first.\",\"start\":0.0,\"end\":1.5,\"voice\":null},\n"
              " {\"text\":\"A < b & c --> d.\",\"start\":1.8,\"end\":3723.0005,\"voice\":\"vivian\"}]\n");
    EXPECT_EQ(captions_text({}, 24000, CaptionFormat::Json), "[]\n");
}

TEST(Captions, FormatByExtension) {
    EXPECT_EQ(caption_format("out/a.SRT", "--captions"), CaptionFormat::Srt);
    EXPECT_EQ(caption_format("a.vtt", "--captions"), CaptionFormat::Vtt);
    EXPECT_EQ(caption_format("a.json", "--captions"), CaptionFormat::Json);
    EXPECT_EQ(refusal("subs.txt"),
              "--captions 'subs.txt': the format comes from the extension, .srt, .vtt or .json, not .txt");
    EXPECT_EQ(refusal("subs"),
              "--captions 'subs': the format comes from the extension, .srt, .vtt or .json, and it has none");
}
