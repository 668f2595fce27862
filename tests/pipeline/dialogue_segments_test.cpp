// A dialogue script → long-form segments (talkbox/dialogue.h): speaker lines, continuation lines,
// the narrator, unknown speakers, and the --cast syntax. No model: voices are given as presets.
#include <gtest/gtest.h>

#include "talkbox/dialogue.h"
#include "talkbox/error.h"

using namespace talkbox;

namespace {

std::vector<CastMember> cast(std::initializer_list<std::pair<const char*, const char*>> members) {
    std::vector<CastMember> out;
    for (const auto& [name, speaker] : members) out.push_back({name, SegmentVoice{speaker, nullptr}});
    return out;
}

// "speaker: text" per segment ("-" for the request's voice).
std::vector<std::string> spoken(const std::string& script, const std::vector<CastMember>& members) {
    LongFormOptions options;
    options.segment_chars = 0;  // one sentence per segment
    std::vector<std::string> out;
    for (const auto& s : dialogue_segments(script, members, options)) {
        EXPECT_FALSE(s.pause_before_ms) << "turns are separated by the usual pause";
        out.push_back((s.voice ? s.voice->speaker : "-") + ": " + s.text);
    }
    return out;
}

std::string error_of(const std::string& script, const std::vector<CastMember>& members) {
    try {
        dialogue_segments(script, members);
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST(DialogueSegments, TurnsContinuationsAndTheNarrator) {
    const auto members = cast({{"alice", "Vivian"}, {"Bob", "Ryan"}});
    // Text before the first name: the request's voice; any case of a cast name; lines without a
    // name (blank ones too) go on with the turn before; a colon that is not after a name is text.
    EXPECT_EQ(spoken("It was late.\nALICE: Who is there?\nNote: the time\nwas 10:30.\n\nbob:  Only me. Alice: go home.\r\nBOB:\nFine.", members),
                     (std::vector<std::string>{"-: It was late.", "Vivian: Who is there?", "Vivian: Note: the time was 10:30.",
                                               "Ryan: Only me.", "Ryan: Alice: go home.", "Ryan: Fine."}));
    // A cast "narrator" speaks what comes before the first name.
    EXPECT_EQ(spoken("\n\nOnce.\nALICE: Hi.", cast({{"Narrator", "Ryan"}, {"alice", "Vivian"}})),
              (std::vector<std::string>{"Ryan: Once.", "Vivian: Hi."}));
    // Names in any script, matched ignoring case; a full-width colon runs into the text.
    EXPECT_EQ(spoken("ÉLODIE: Bonjour.\n爱丽丝：你好。\n  Dr. O'Neil : Yes.", cast({{"élodie", "Vivian"}, {"爱丽丝", "Serena"}, {"DR. O'NEIL", "Ryan"}})),
              (std::vector<std::string>{"Vivian: Bonjour.", "Serena: 你好。", "Ryan: Yes."}));
}

TEST(DialogueSegments, ErrorsNameTheLine) {
    const auto members = cast({{"alice", "Vivian"}, {"bob", "Ryan"}});
    EXPECT_EQ(error_of("ALICE: Hi.\n\nCAROL: Hello.", members), "dialogue line 3: speaker 'CAROL' is not in the cast (the cast: alice, bob)");
    EXPECT_EQ(error_of("ALICE:\nBOB: Hi.", members), "dialogue line 1: ALICE has nothing to say");
    EXPECT_EQ(error_of("ALICE: Hi.\nBob:  \n", members), "dialogue line 2: Bob has nothing to say");
    EXPECT_THROW(dialogue_segments(" \n\n", members), EmptyText);
    EXPECT_EQ(error_of(std::string("ALICE: Hi.\nBOB: a\0b", 19), members), "the dialogue holds a NUL character at byte offset 17");
    // A name not in capitals that the cast lacks, or one too long to be a name, is text.
    EXPECT_EQ(error_of("Carol: hello.\n" + std::string(33, 'A') + ": long.", members), "(no error)");
}

TEST(DialogueSegments, CastSyntax) {
    using Cast = std::vector<std::pair<std::string, std::string>>;
    EXPECT_EQ(parse_cast("alice=ryan, Narrator = voices/fox.voice,ÉLODIE=builtin"),
              (Cast{{"alice", "ryan"}, {"Narrator", "voices/fox.voice"}, {"ÉLODIE", "builtin"}}));
    const auto error = [](const std::string& spec) {
        try {
            parse_cast(spec);
        } catch (const Error& e) {
            return std::string(e.what());
        }
        return std::string("(no error)");
    };
    EXPECT_EQ(error("alice=ryan,bob"), "cast entry 'bob': expected NAME=VOICE (e.g. alice=ryan,narrator=fox.voice)");
    EXPECT_EQ(error("alice=ryan,"), "cast entry '': expected NAME=VOICE (e.g. alice=ryan,narrator=fox.voice)");
    EXPECT_EQ(error("=ryan"), "cast entry '=ryan': expected NAME=VOICE (e.g. alice=ryan,narrator=fox.voice)");
    EXPECT_EQ(error("alice=ryan,ALICE=vivian"), "the cast names 'ALICE' twice (as 'alice'; names are matched ignoring case)");
    EXPECT_NE(error("a:b=ryan").find("cast name 'a:b' cannot begin a line of dialogue"), std::string::npos);
    EXPECT_NE(error("1st=ryan").find("starting with a letter"), std::string::npos);
}
