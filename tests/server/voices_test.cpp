// The voices folder as shared state: no-replace creation (one winner among threads and among
// registries sharing the folder), look-ups that follow the folder, voices removed while in use.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "server/api_error.h"
#include "server/voices.h"
#include "support/test_support.h"
#include "talkbox/voice_file.h"

namespace fs = std::filesystem;
using namespace talkbox;
using talkbox::server::ApiError;
using talkbox::server::VoiceRegistry;
using talkbox::testing::TempDir;

namespace {

Voice voice(float first) {
    Voice v;
    v.model_size = "0.6b";
    v.embedding_dim = 4;
    v.embedding = {first, 0.5f, -0.25f, 1.0f};
    return v;
}

std::vector<std::string> entries(const std::string& dir) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path().filename().string());
    return out;
}

// Many threads add a voice through `registries`, thread i as names[i % names.size()] (both round
// robin); returns how many succeeded, and checks that every loser got 409 voice_exists.
int race(std::vector<VoiceRegistry*> registries, const std::vector<std::string>& names, int threads) {
    std::atomic<int> wins{0}, conflicts{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> pool;
    for (int i = 0; i < threads; ++i) {
        pool.emplace_back([&, i] {
            while (!go) std::this_thread::yield();
            try {
                registries[i % registries.size()]->add(names[i % names.size()], voice(float(i)));
                ++wins;
            } catch (const ApiError& e) {
                if (e.status == 409 && e.code == "voice_exists") ++conflicts;
            }
        });
    }
    go = true;
    for (auto& t : pool) t.join();
    EXPECT_EQ(wins + conflicts, threads) << "a loser got another error than 409";
    return wins;
}

}  // namespace

TEST(VoiceRegistry, ConcurrentAddsOfOneNameHaveOneWinner) {
    TempDir dir;
    VoiceRegistry reg(dir.path());
    EXPECT_EQ(race({&reg}, {"anna"}, 16), 1);
    EXPECT_EQ(entries(dir.path()), std::vector<std::string>{"anna.voice"}) << "stray temporary files";
    ASSERT_NE(reg.find("anna"), nullptr);
}

TEST(VoiceRegistry, TwoRegistriesSharingAFolderHaveOneWinner) {
    TempDir dir;
    VoiceRegistry a(dir.path()), b(dir.path());
    for (const char* name : {"anna", "bob", "carl"}) EXPECT_EQ(race({&a, &b}, {name}, 12), 1) << name;
    auto names = entries(dir.path());
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"anna.voice", "bob.voice", "carl.voice"})) << "stray temporary files";
    // Both see the same winner: the one file on disk.
    for (const char* name : {"anna", "bob", "carl"}) EXPECT_EQ(a.find(name)->embedding, b.find(name)->embedding) << name;
}

TEST(VoiceRegistry, AddNeverReplacesAFileWrittenByAnotherProcess) {
    TempDir dir;
    VoiceRegistry reg(dir.path());
    save_voice(voice(7.0f), dir.file("anna.voice"));
    try {
        reg.add("anna", voice(1.0f));
        FAIL() << "expected 409";
    } catch (const ApiError& e) {
        EXPECT_EQ(e.status, 409);
        EXPECT_EQ(e.code, "voice_exists");
        EXPECT_EQ(std::string(e.what()), "a voice named 'anna' already exists");
    }
    EXPECT_EQ(load_voice(dir.file("anna.voice")).embedding[0], 7.0f);
}

// Wyoming clients match voice names ignoring case: a name differing from a registered one only in
// case is refused, naming both, whether the other was added here or by another process.
TEST(VoiceRegistry, NamesDifferingOnlyInCaseAreRefusedNamingBoth) {
    TempDir dir;
    VoiceRegistry reg(dir.path()), other(dir.path());
    reg.add("Anna", voice(1.0f));
    save_voice(voice(2.0f), dir.file("bob.voice"));  // written by another process
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"anna", "a voice named 'Anna' already exists, and 'anna' differs from it only in case (voice names are matched ignoring case)"},
        {"ANNA", "a voice named 'Anna' already exists, and 'ANNA' differs from it only in case (voice names are matched ignoring case)"},
        {"Bob", "a voice named 'bob' already exists, and 'Bob' differs from it only in case (voice names are matched ignoring case)"},
        {"Anna", "a voice named 'Anna' already exists"}};
    for (VoiceRegistry* r : {&reg, &other}) {
        for (const auto& [name, message] : cases) {
            try {
                r->add(name, voice(3.0f));
                ADD_FAILURE() << name << " was added";
            } catch (const ApiError& e) {
                EXPECT_EQ(e.status, 409) << name;
                EXPECT_EQ(e.code, "voice_exists") << name;
                EXPECT_EQ(e.param, "name") << name;
                EXPECT_EQ(std::string(e.what()), message);
            }
        }
    }
    auto names = entries(dir.path());
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, (std::vector<std::string>{"Anna.voice", "bob.voice"})) << "a refused voice left a file";
    EXPECT_EQ(reg.find("Anna")->embedding[0], 1.0f);
    EXPECT_EQ(reg.find("anna"), nullptr);  // look-ups stay exact: the refusal is what keeps names apart
}

// Case twins racing through two registries sharing the folder: never two of them created, and a
// file on disk exactly for each reported winner (a loser that wrote first withdraws its file).
TEST(VoiceRegistry, RacingCaseTwinsNeverBothWin) {
    for (int round = 0; round < 20; ++round) {
        TempDir dir;
        VoiceRegistry a(dir.path()), b(dir.path());
        const int wins = race({&a, &b}, {"anna", "Anna", "ANNA", "aNNa", "annA"}, 10);
        EXPECT_LE(wins, 1) << "round " << round;
        EXPECT_EQ(entries(dir.path()).size(), static_cast<size_t>(wins)) << "round " << round;
    }
}

TEST(VoiceRegistry, VoiceRemovedWhileInUseStaysUsable) {
    TempDir dir;
    VoiceRegistry reg(dir.path());
    reg.add("anna", voice(3.0f));
    const std::shared_ptr<const Voice> speaking = reg.find("anna");  // what a running request holds
    ASSERT_NE(speaking, nullptr);
    EXPECT_TRUE(reg.remove("anna"));
    EXPECT_EQ(reg.find("anna"), nullptr);
    EXPECT_FALSE(reg.remove("anna"));
    EXPECT_EQ(speaking->embedding, voice(3.0f).embedding);  // the request finishes with its voice
    EXPECT_TRUE(reg.list().empty());
}

TEST(VoiceRegistry, LookUpsFollowTheFolder) {
    TempDir dir;
    VoiceRegistry reg(dir.path());
    reg.add("anna", voice(1.0f));
    EXPECT_EQ(reg.find("anna")->embedding[0], 1.0f);  // now cached

    // Another process replaces the file (atomic rename: a new inode) ...
    save_voice(voice(2.0f), dir.file("anna.voice"));
    EXPECT_EQ(reg.find("anna")->embedding[0], 2.0f);
    // ... rewrites it in place with the same size (mtime changes) ...
    {
        const Voice v3 = voice(4.0f);
        save_voice(v3, dir.file("other.voice"));
        const std::string bytes = talkbox::testing::read_text(dir.file("other.voice"));
        fs::remove(dir.file("other.voice"));
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // a distinct mtime on coarse clocks
        talkbox::testing::write_text(dir.file("anna.voice"), bytes);
    }
    EXPECT_EQ(reg.find("anna")->embedding[0], 4.0f);
    // ... adds one, removes one.
    save_voice(voice(5.0f), dir.file("bob.voice"));
    auto listed = reg.list();
    ASSERT_EQ(listed.size(), 2u);
    EXPECT_EQ(listed[0].first, "anna");
    EXPECT_EQ(listed[1].first, "bob");
    fs::remove(dir.file("anna.voice"));
    EXPECT_EQ(reg.find("anna"), nullptr);
    listed = reg.list();
    ASSERT_EQ(listed.size(), 1u);
    EXPECT_EQ(listed[0].first, "bob");
    EXPECT_EQ(listed[0].second->embedding[0], 5.0f);
}

TEST(VoiceRegistry, InvalidNamesAreRefusedBeforeTouchingTheFolder) {
    TempDir dir;
    VoiceRegistry reg(dir.path());
    for (const char* name : {"", "../evil", "a/b", "a.voice"}) {
        try {
            reg.add(name, voice(1.0f));
            FAIL() << name;
        } catch (const ApiError& e) {
            EXPECT_EQ(e.status, 400) << name;
        }
    }
    EXPECT_TRUE(fs::is_empty(dir.path()));
}

// A temporary file left by a replica killed mid-write is removed when a registry opens the
// folder, once it is old; a fresh one (another replica writing now) and other files stay.
TEST(VoiceRegistry, OpeningTheFolderRemovesStaleTemporaryFiles) {
    TempDir dir;
    const auto old = fs::file_time_type::clock::now() - std::chrono::seconds(VoiceRegistry::kStaleTempSeconds + 60);
    for (const std::string f : {"fox.voice.tmp-AbC123", "fresh.voice.tmp-XyZ789", "notes.txt", "x.voice.tmp-short", "kept.voice"}) {
        talkbox::testing::write_text(dir.file(f), "partial");
        if (f != "fresh.voice.tmp-XyZ789") fs::last_write_time(dir.file(f), old);
    }
    VoiceRegistry r(dir.path());
    auto left = entries(dir.path());
    std::sort(left.begin(), left.end());
    EXPECT_EQ(left, (std::vector<std::string>{"fresh.voice.tmp-XyZ789", "kept.voice", "notes.txt", "x.voice.tmp-short"}));
}

