// The hub client and model cache against a fake hub on 127.0.0.1 (tests/hub/fake_hub.h): what
// `pull` fetches, resuming, verification, the hub's error answers, and resolving cached models.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <nlohmann/json.hpp>
#include <sys/file.h>
#include <unistd.h>

#include "convert/safetensors.h"
#include "core/gguf_file.h"
#include "hub/fake_hub.h"
#include "hub/hub_api.h"
#include "hub/model_cache.h"
#include "hub/sha256.h"
#include "hub/snapshot.h"
#include "support/test_support.h"
#include "talkbox/error.h"
#include "talkbox/hub.h"

namespace fs = std::filesystem;
using talkbox::Error;
using talkbox::ErrorKind;
using talkbox::PullOptions;
using talkbox::WeightType;
using talkbox::testing::FakeHub;
using talkbox::testing::read_text;
using talkbox::testing::TempDir;

namespace {

const std::string kRepo = "Qwen/Qwen3-TTS-12Hz-0.6B-Base";
const std::vector<std::string> kSnapshotFiles = {"config.json", "generation_config.json", "merges.txt",
                                                  "model.safetensors", "tokenizer_config.json", "vocab.json",
                                                  "speech_tokenizer/config.json", "speech_tokenizer/model.safetensors",
                                                  "speech_tokenizer/preprocessor_config.json"};

// Runs `fn`, which must throw talkbox::Error of `kind` whose message contains each of `wants`.
void expect_error(const std::function<void()>& fn, ErrorKind kind, const std::vector<std::string>& wants) {
    try {
        fn();
        ADD_FAILURE() << "no error; expected one containing '" << wants[0] << "'";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), kind) << e.what();
        for (const auto& want : wants) {
            EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << "'" << want << "' not in: " << e.what();
        }
    }
}
void expect_error(const std::function<void()>& fn, ErrorKind kind, const std::string& want) {
    expect_error(fn, kind, std::vector<std::string>{want});
}

// Leftovers a failed or finished run must not leave: temporary GGUFs and (unless resumable) .part files.
std::vector<std::string> files_under(const std::string& dir, const std::string& name_part) {
    std::vector<std::string> found;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
        if (e.path().filename().string().find(name_part) != std::string::npos) found.push_back(e.path().string());
    }
    return found;
}

class Hub : public ::testing::Test {
protected:
    void SetUp() override {
        for (const char* var : {"HF_TOKEN", "HF_ENDPOINT"}) unsetenv(var);
        fixture_ = talkbox::testing::qwen_fixture("tiny-0.6B-Base");
        hub_.add_repo(kRepo, fixture_);
        // Files a real repository has that conversion does not need.
        hub_.add_file(kRepo, "README.md", "# Qwen3-TTS\n");
        hub_.add_file(kRepo, ".gitattributes", "*.safetensors filter=lfs diff=lfs merge=lfs -text\n");
        hub_.add_file(kRepo, "extras/unused.safetensors", std::string(4096, 'x'));
        hub_.set_page_size(4);  // the file tree spans several pages
    }

    PullOptions options(WeightType type = WeightType::Q8_0) const {
        PullOptions o;
        o.repo_id = kRepo;
        o.type = type;
        o.cache_dir = cache_.path();
        o.endpoint = hub_.endpoint();
        o.stall_timeout_s = 5;
        return o;
    }

    // Only the download half of pull (no conversion), for the transfer tests.
    talkbox::hub::SnapshotDownload fetch(const PullOptions& o) const {
        talkbox::hub::HttpClient http({o.token, o.stall_timeout_s});
        talkbox::hub::HubApi api(http, o.endpoint, o.repo_id);
        const auto info = api.info(o.revision);
        return talkbox::hub::download_snapshot(api, info, talkbox::hub::snapshot_dir(o.cache_dir, o.repo_id, info.commit),
                                               nullptr);
    }

    std::string snapshot(const std::string& file) const {
        return talkbox::hub::snapshot_dir(cache_.path(), kRepo, hub_.commit(kRepo)) + "/" + file;
    }
    std::string lfs_path(const std::string& file) const {
        return "/cdn-lfs/repos/" + FakeHub::sha256_hex(read_text(fixture_ + "/" + file));
    }
    uint64_t fixture_size(const std::string& file) const { return fs::file_size(fixture_ + "/" + file); }

    FakeHub hub_;
    TempDir cache_;
    std::string fixture_;
};

TEST_F(Hub, PullDownloadsOnlyWhatConversionNeedsAndConverts) {
    PullOptions o = options();
    o.token = "hf_secret";
    std::vector<talkbox::PullProgress> events;
    o.progress = [&](const talkbox::PullProgress& p) { events.push_back(p); };
    const auto r = talkbox::pull_model(o);

    EXPECT_EQ(r.model_path, cache_.path() + "/models/Qwen--Qwen3-TTS-12Hz-0.6B-Base-q8_0.gguf");
    EXPECT_EQ(r.commit, hub_.commit(kRepo));
    EXPECT_FALSE(r.up_to_date);
    EXPECT_EQ(r.files_downloaded, kSnapshotFiles.size());
    uint64_t total = 0;
    for (const auto& f : kSnapshotFiles) {
        total += fixture_size(f);
        EXPECT_EQ(read_text(snapshot(f)), read_text(fixture_ + "/" + f)) << f;
    }
    EXPECT_EQ(r.bytes_downloaded, total);
    EXPECT_TRUE(files_under(cache_.path(), ".part").empty());
    EXPECT_TRUE(files_under(cache_.path(), ".tmp-").empty());

    // Nothing else was fetched; the listing was recursive and paginated.
    for (const char* skipped : {"README.md", ".gitattributes", "extras/unused.safetensors"}) {
        EXPECT_TRUE(hub_.requests_for(std::string("/") + skipped).empty()) << skipped;
    }
    const auto tree = hub_.requests_for("/tree/" + r.commit);
    EXPECT_GE(tree.size(), 3u);
    for (const auto& t : tree) EXPECT_NE(t.query.find("recursive=true"), std::string::npos) << t.query;

    // The token went to the hub but not to the CDN the LFS files redirect to.
    for (const auto& req : hub_.requests()) {
        const bool cdn = req.path.rfind("/cdn-lfs/", 0) == 0;
        EXPECT_EQ(req.authorization, cdn ? "" : "Bearer hf_secret") << req.path;
    }
    EXPECT_EQ(hub_.requests_for(lfs_path("model.safetensors")).size(), 1u);

    const talkbox::GgufFile model(r.model_path);
    EXPECT_EQ(model.meta().get_string("general.name"), "Qwen3-TTS-12Hz-0.6B-Base");
    EXPECT_EQ(model.meta().get_string("general.source.url"), hub_.endpoint() + "/" + kRepo + "/tree/" + r.commit);
    EXPECT_EQ(model.meta().get_string("qwen3tts.weight_type"), "q8_0");

    // Progress: every file's download ends complete, then the conversion counts its tensors.
    ASSERT_FALSE(events.empty());
    EXPECT_EQ(events.back().stage, talkbox::PullProgress::Stage::Convert);
    EXPECT_EQ(events.back().done, events.back().total);
    size_t completed = 0;
    for (const auto& e : events) {
        if (e.stage == talkbox::PullProgress::Stage::Download && e.done == e.total && e.total > 0) ++completed;
    }
    EXPECT_GE(completed, kSnapshotFiles.size());

    const auto listed = talkbox::list_cached_models(cache_.path());
    ASSERT_EQ(listed.size(), 1u);
    EXPECT_EQ(listed[0].repo_id, kRepo);
    EXPECT_EQ(listed[0].type, WeightType::Q8_0);
    EXPECT_EQ(listed[0].path, r.model_path);
    EXPECT_EQ(listed[0].bytes, fs::file_size(r.model_path));
    EXPECT_EQ(talkbox::resolve_model(kRepo, std::nullopt, cache_.path()), r.model_path);
}

TEST_F(Hub, PullAgainIsUpToDateAndANewCommitIsFetchedAgain) {
    const auto first = talkbox::pull_model(options());
    const size_t requests = hub_.requests().size();
    const auto again = talkbox::pull_model(options());
    EXPECT_TRUE(again.up_to_date);
    EXPECT_EQ(again.model_path, first.model_path);
    EXPECT_EQ(hub_.requests().size(), requests + 1);  // only the revision lookup

    // Another type converts the snapshot already on disk.
    const auto f16 = talkbox::pull_model(options(WeightType::F16));
    EXPECT_FALSE(f16.up_to_date);
    EXPECT_EQ(f16.files_downloaded, 0u);
    EXPECT_TRUE(fs::exists(cache_.path() + "/models/Qwen--Qwen3-TTS-12Hz-0.6B-Base-f16.gguf"));

    // main moved: a new snapshot folder, and the model is converted again from it.
    hub_.set_commit(kRepo, std::string(40, 'c'));
    const auto moved = talkbox::pull_model(options());
    EXPECT_FALSE(moved.up_to_date);
    EXPECT_EQ(moved.commit, std::string(40, 'c'));
    EXPECT_EQ(moved.files_downloaded, kSnapshotFiles.size());
    EXPECT_TRUE(fs::exists(snapshot("model.safetensors")));
    const talkbox::GgufFile model(moved.model_path);
    EXPECT_EQ(model.meta().get_string("general.source.url"), hub_.endpoint() + "/" + kRepo + "/tree/" + moved.commit);
}

TEST_F(Hub, ResumesWithARangeAfterTheConnectionDrops) {
    hub_.drop_once_after("model.safetensors", 1 << 20);
    const auto d = fetch(options());
    EXPECT_EQ(read_text(snapshot("model.safetensors")), read_text(fixture_ + "/model.safetensors"));
    const auto cdn = hub_.requests_for(lfs_path("model.safetensors"));
    ASSERT_EQ(cdn.size(), 2u);
    EXPECT_EQ(cdn[0].range, "");
    EXPECT_EQ(cdn[1].range, "bytes=1048576-");
    EXPECT_EQ(cdn[1].status, 206);
    uint64_t total = 0;
    for (const auto& f : kSnapshotFiles) total += fixture_size(f);
    EXPECT_EQ(d.bytes_downloaded, total);
    EXPECT_TRUE(files_under(cache_.path(), ".part").empty());
}

TEST_F(Hub, ResumesFromThePartFileOfAnEarlierRun) {
    const std::string whole = read_text(fixture_ + "/speech_tokenizer/model.safetensors");
    fs::create_directories(snapshot("speech_tokenizer"));
    talkbox::testing::write_text(snapshot("speech_tokenizer/model.safetensors.part"), whole.substr(0, 3000000));
    const auto d = fetch(options());
    EXPECT_EQ(read_text(snapshot("speech_tokenizer/model.safetensors")), whole);
    const auto cdn = hub_.requests_for(lfs_path("speech_tokenizer/model.safetensors"));
    ASSERT_EQ(cdn.size(), 1u);
    EXPECT_EQ(cdn[0].range, "bytes=3000000-");
    EXPECT_EQ(cdn[0].status, 206);
    EXPECT_FALSE(fs::exists(snapshot("speech_tokenizer/model.safetensors.part")));

    uint64_t total = 0;
    for (const auto& f : kSnapshotFiles) total += fixture_size(f);
    EXPECT_EQ(d.bytes_downloaded, total - 3000000);

    // Files already in place are not fetched again.
    const size_t fetched = hub_.requests_for("/resolve/").size();
    EXPECT_EQ(fetch(options()).files_downloaded, 0u);
    EXPECT_EQ(hub_.requests_for("/resolve/").size(), fetched);
}

TEST_F(Hub, AServerThatIgnoresTheRangeIsReadFromTheStart) {
    const std::string whole = read_text(fixture_ + "/model.safetensors");
    fs::create_directories(talkbox::hub::snapshot_dir(cache_.path(), kRepo, hub_.commit(kRepo)));
    talkbox::testing::write_text(snapshot("model.safetensors.part"), whole.substr(0, 5000));
    hub_.ignore_range("model.safetensors");
    fetch(options());
    EXPECT_EQ(read_text(snapshot("model.safetensors")), whole);
    EXPECT_EQ(hub_.requests_for(lfs_path("model.safetensors"))[0].range, "bytes=5000-");
}

TEST_F(Hub, ChecksumMismatchDeletesTheDownload) {
    hub_.corrupt("speech_tokenizer/model.safetensors");
    expect_error([&] { talkbox::pull_model(options()); }, ErrorKind::Format,
                 {"speech_tokenizer/model.safetensors from ", "sha256 mismatch", "the download was deleted"});
    EXPECT_FALSE(fs::exists(snapshot("speech_tokenizer/model.safetensors")));
    EXPECT_TRUE(files_under(cache_.path(), ".part").empty());
    EXPECT_TRUE(files_under(cache_.path(), ".gguf").empty());
}

// Files stored in git (config, tokenizer, index) are checked against their git blob id.
TEST_F(Hub, GitFilesAreCheckedAgainstTheirBlobId) {
    hub_.corrupt("config.json");
    expect_error([&] { fetch(options()); }, ErrorKind::Format,
                 {"config.json from ", "git blob id mismatch", "the download was deleted"});
    EXPECT_FALSE(fs::exists(snapshot("config.json")));
    EXPECT_TRUE(files_under(cache_.path(), ".part").empty());
}

TEST_F(Hub, RedirectsToOtherSchemesAreRefused) {
    for (const std::string target : {"ftp://127.0.0.1/config.json", "file:///etc/passwd", "gopher://127.0.0.1/x"}) {
        hub_.redirect("config.json", target);
        expect_error([&] { fetch(options()); }, ErrorKind::Io,
                     {"refused a redirect to " + target + " while fetching " + hub_.endpoint() + "/" + kRepo + "/resolve/",
                      "/config.json: only http and https redirects are followed"});
    }
    EXPECT_FALSE(fs::exists(snapshot("config.json")));
}

TEST_F(Hub, AnErrorBodyIsSummarisedNotPrinted) {
    hub_.fail_with("config.json", 500, "{\"error\": \"disk \\u001b[2Jfull\\r\\n" + std::string(400, 'x') + "\"}");
    try {
        fetch(options());
        FAIL() << "expected an error";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("the hub answered HTTP 500 to "), std::string::npos) << msg;
        EXPECT_NE(msg.find(": disk ?[2Jfull??" + std::string(200 - 15, 'x') + "..."), std::string::npos) << msg;
        EXPECT_EQ(msg.find('\x1b'), std::string::npos) << msg;
    }
    hub_.fail_with("config.json", 502, "<html><body>\x1b]0;owned\x07 Bad gateway</body></html>");
    try {
        fetch(options());
        FAIL() << "expected an error";
    } catch (const Error& e) {
        const std::string msg = e.what();
        EXPECT_EQ(msg.substr(msg.size() - 12), "/config.json") << "a non-JSON body must not be shown: " << msg;
        EXPECT_NE(msg.find("the hub answered HTTP 502 to "), std::string::npos) << msg;
    }
}

TEST_F(Hub, SizesMustMatchTheListing) {
    hub_.set_listed_size(kRepo, "config.json", fixture_size("config.json") + 10);
    expect_error([&] { fetch(options()); }, ErrorKind::Format, "the server sent " + std::to_string(fixture_size("config.json")) +
                                                                   " bytes, the hub lists");
    hub_.set_listed_size(kRepo, "config.json", fixture_size("config.json"));
    hub_.set_listed_size(kRepo, "vocab.json", fixture_size("vocab.json") - 10);
    expect_error([&] { fetch(options()); }, ErrorKind::Format, "vocab.json from");
    EXPECT_FALSE(fs::exists(snapshot("vocab.json")));
    EXPECT_TRUE(files_under(cache_.path(), ".part").empty());
}

TEST_F(Hub, AStalledTransferTimesOut) {
    hub_.stall("model.safetensors");
    PullOptions o = options();
    o.stall_timeout_s = 1;
    const auto start = std::chrono::steady_clock::now();
    expect_error([&] { talkbox::pull_model(o); }, ErrorKind::Io, "nothing received for 1 s");
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(6));
    EXPECT_TRUE(files_under(cache_.path(), ".part").empty());  // nothing arrived, nothing to resume
    EXPECT_TRUE(files_under(cache_.path(), ".gguf").empty());
}

TEST_F(Hub, UnknownRepositoryIsNotFoundOrGated) {
    PullOptions o = options();
    o.repo_id = "Qwen/no-such-model";
    expect_error([&] { talkbox::pull_model(o); }, ErrorKind::NotFound,
                 "repository 'Qwen/no-such-model' not found or gated: set HF_TOKEN");
    EXPECT_EQ(hub_.requests().back().status, 401);
    o.token = "hf_someone";
    expect_error([&] { talkbox::pull_model(o); }, ErrorKind::NotFound,
                 "repository 'Qwen/no-such-model' not found, or HF_TOKEN cannot read it");
    EXPECT_EQ(hub_.requests().back().status, 404);
    o.repo_id = kRepo;
    o.revision = "v9";
    expect_error([&] { talkbox::pull_model(o); }, ErrorKind::NotFound, "has no such revision");
}

TEST_F(Hub, GatedRepositoryNeedsAGrantedToken) {
    hub_.set_gated(kRepo, "hf_granted");
    expect_error([&] { fetch(options()); }, ErrorKind::NotFound,
                 "repository '" + kRepo + "' is gated: accept its terms at " + hub_.endpoint() + "/" + kRepo);
    PullOptions o = options();
    o.token = "hf_other";
    expect_error([&] { fetch(o); }, ErrorKind::NotFound, "HF_TOKEN has no access to repository '" + kRepo + "'");
    EXPECT_TRUE(files_under(cache_.path(), ".part").empty());

    // HF_TOKEN and HF_ENDPOINT come from the environment when the options leave them empty.
    setenv("HF_TOKEN", "hf_granted", 1);
    setenv("HF_ENDPOINT", (hub_.endpoint() + "/").c_str(), 1);
    o = options();
    o.endpoint.clear();
    const auto r = talkbox::pull_model(o);
    unsetenv("HF_TOKEN");
    unsetenv("HF_ENDPOINT");
    EXPECT_TRUE(fs::exists(r.model_path));
    EXPECT_EQ(hub_.requests().back().authorization, "Bearer hf_granted");
}

TEST_F(Hub, MissingRequiredFilesAreReportedBeforeDownloading) {
    TempDir dir;
    talkbox::testing::copy_tree(fixture_, dir.file("snap"));
    fs::remove(dir.file("snap/speech_tokenizer/model.safetensors"));
    FakeHub hub;
    hub.add_repo("someone/not-tts", dir.file("snap"));
    PullOptions o = options();
    o.repo_id = "someone/not-tts";
    o.endpoint = hub.endpoint();
    expect_error([&] { talkbox::pull_model(o); }, ErrorKind::NotFound,
                 "has no speech_tokenizer/model.safetensors: is it a Qwen3-TTS checkpoint?");
    for (const auto& r : hub.requests()) EXPECT_EQ(r.path.find("/resolve/"), std::string::npos) << r.path;
}

TEST_F(Hub, UnsafePathsFromTheHubAreRejected) {
    for (const std::string& bad : std::vector<std::string>{"../../evil.json", "/etc/evil.json", "a//b.json", "speech_tokenizer/../../x",
                                  "a\\..\\b", "./config.json"}) {
        FakeHub hub;
        hub.add_repo(kRepo, fixture_);
        hub.list_extra_path(kRepo, bad);
        PullOptions o = options();
        o.endpoint = hub.endpoint();
        expect_error([&] { talkbox::pull_model(o); }, ErrorKind::Format, "unsafe path");
    }
    EXPECT_FALSE(fs::exists(cache_.path() + "/hub/evil.json"));
    EXPECT_FALSE(fs::exists(fs::path(cache_.path()).parent_path() / "evil.json"));
}

TEST_F(Hub, ShardedCheckpointsFetchTheIndexAndItsShards) {
    // The fixture's weights split over two shards plus the index, as large checkpoints ship.
    TempDir dir;
    const std::string snap = dir.file("snap");
    talkbox::testing::copy_tree(fixture_, snap);
    fs::remove(snap + "/model.safetensors");
    const talkbox::SafetensorsFile whole(fixture_ + "/model.safetensors");
    std::vector<talkbox::testing::RawTensor> shard[2];
    nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::json::object()}};
    size_t k = 0;
    for (const auto& t : whole.tensors()) {
        const size_t s = k++ % 2;
        shard[s].push_back({t.name, talkbox::safetensors_dtype_name(t.dtype), t.shape,
                            std::vector<uint8_t>(t.data, t.data + t.nbytes)});
        index["weight_map"][t.name] = "model-0000" + std::to_string(s + 1) + "-of-00002.safetensors";
    }
    for (size_t s = 0; s < 2; ++s) {
        talkbox::testing::write_file(snap + "/model-0000" + std::to_string(s + 1) + "-of-00002.safetensors",
                                     talkbox::testing::make_safetensors(shard[s]));
    }
    talkbox::testing::write_text(snap + "/model.safetensors.index.json", index.dump(2));
    hub_.add_repo("Qwen/sharded", snap);

    PullOptions o = options();
    o.repo_id = "Qwen/sharded";
    const auto r = talkbox::pull_model(o);
    EXPECT_EQ(r.files_downloaded, kSnapshotFiles.size() + 2);  // index + 2 shards instead of one file
    const std::string got = talkbox::hub::snapshot_dir(cache_.path(), "Qwen/sharded", r.commit);
    for (const char* f : {"model.safetensors.index.json", "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}) {
        EXPECT_EQ(read_text(got + "/" + f), read_text(snap + "/" + f)) << f;
    }
    EXPECT_EQ(talkbox::GgufFile(r.model_path).tensors().size(), 517u);

    // An index that names a shard outside the snapshot folder is refused.
    nlohmann::json evil = index;
    evil["weight_map"][whole.tensors()[0].name] = "../model-00001-of-00002.safetensors";
    talkbox::testing::write_text(snap + "/model.safetensors.index.json", evil.dump());
    hub_.add_repo("Qwen/sharded-evil", snap);
    o.repo_id = "Qwen/sharded-evil";
    expect_error([&] { talkbox::pull_model(o); }, ErrorKind::Format, "must be a plain file name");
}

TEST_F(Hub, TokenizerJsonIsFetchedWhenTheRepositoryHasOne) {
    hub_.add_file(kRepo, "tokenizer.json", "{\"model\": {\"vocab\": {}}}");
    // The converter reads it and finds that it disagrees with vocab.json: proof it was used.
    expect_error([&] { talkbox::pull_model(options()); }, ErrorKind::Format, "tokenizer.json");
    EXPECT_EQ(hub_.requests_for("/tokenizer.json").size(), 1u);
    EXPECT_TRUE(files_under(cache_.path(), ".gguf").empty());
}

TEST_F(Hub, AConcurrentPullOfTheSameRepositoryIsRefused) {
    const std::string dir = talkbox::hub::repo_dir(cache_.path(), kRepo);
    fs::create_directories(dir);
    const int fd = open((dir + "/.lock").c_str(), O_RDWR | O_CREAT, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(flock(fd, LOCK_EX), 0);
    expect_error([&] { talkbox::pull_model(options()); }, ErrorKind::Io, "another `talkbox pull " + kRepo + "` is running");
    close(fd);
    EXPECT_TRUE(hub_.requests().empty());
}

TEST_F(Hub, BadOptionsAreRejectedBeforeAnyRequest) {
    for (const std::string& id : std::vector<std::string>{"", "noslash", "a/b/c", "../x", "a/..", "-a/b", "a/b-", "a--b/c", "a/b..c", "a/ b",
                                 "a/b\n", ".a/b", "a/" + std::string(95, 'x')}) {
        PullOptions o = options();
        o.repo_id = id;
        expect_error([&] { talkbox::pull_model(o); }, ErrorKind::InvalidArgument, "invalid repository id");
    }
    PullOptions o = options();
    o.endpoint = "ftp://example.com";
    expect_error([&] { talkbox::pull_model(o); }, ErrorKind::InvalidArgument, "HF_ENDPOINT must be an http:// or https:// URL");
    o = options();
    o.token = "hf_x\r\nX-Injected: 1";
    expect_error([&] { talkbox::pull_model(o); }, ErrorKind::InvalidArgument, "HF_TOKEN contains a character");
    EXPECT_TRUE(hub_.requests().empty());
}

TEST(HubNames, RepoIdsAndPaths) {
    using talkbox::hub::is_safe_repo_path;
    using talkbox::hub::is_valid_repo_id;
    for (const char* ok : {"Qwen/Qwen3-TTS-12Hz-0.6B-Base", "a/b", "a_b/c.d", "ResembleAI/chatterbox"}) {
        EXPECT_TRUE(is_valid_repo_id(ok)) << ok;
    }
    EXPECT_EQ(talkbox::hub::repo_folder_name("Qwen/Qwen3-TTS-12Hz-0.6B-Base"), "Qwen--Qwen3-TTS-12Hz-0.6B-Base");
    for (const char* ok : {"config.json", "speech_tokenizer/model.safetensors", "a/b/c.d", "with space.txt"}) {
        EXPECT_TRUE(is_safe_repo_path(ok)) << ok;
    }
    for (const std::string& bad : std::vector<std::string>{"", "/abs", "..", "../x", "a/../b", "a/./b", "a//b", "a/", "a\\b", std::string("a\0b", 3),
                                  "a\tb"}) {
        EXPECT_FALSE(is_safe_repo_path(bad)) << bad;
    }
}

TEST(HubCache, ResolveModelPrefersTheRequestedTypeThenAnyCachedOne) {
    TempDir cache;
    fs::create_directories(cache.file("models"));
    talkbox::testing::write_text(cache.file("models/Qwen--M-q4_k.gguf"), "x");
    talkbox::testing::write_text(cache.file("models/Qwen--M-bf16.gguf"), "x");
    using talkbox::resolve_model;
    EXPECT_EQ(resolve_model("Qwen/M", WeightType::Q4_K, cache.path()), cache.file("models/Qwen--M-q4_k.gguf"));
    EXPECT_EQ(resolve_model("Qwen/M", WeightType::Q8_0, cache.path()), cache.file("models/Qwen--M-bf16.gguf"));
    EXPECT_EQ(resolve_model("Qwen/M", std::nullopt, cache.path()), cache.file("models/Qwen--M-bf16.gguf"));
    talkbox::testing::write_text(cache.file("models/Qwen--M-f16.gguf"), "x");
    EXPECT_EQ(resolve_model("Qwen/M", std::nullopt, cache.path()), cache.file("models/Qwen--M-f16.gguf"));

    // A path that exists is taken as is, whatever it looks like.
    EXPECT_EQ(resolve_model(cache.file("models/Qwen--M-q4_k.gguf"), WeightType::F32, cache.path()),
              cache.file("models/Qwen--M-q4_k.gguf"));
    expect_error([&] { resolve_model("Qwen/Other", WeightType::Q8_0, cache.path()); }, ErrorKind::NotFound,
                 "model 'Qwen/Other' is not in the cache (" + cache.file("models") +
                     "): run `talkbox pull Qwen/Other --type q8_0` first");
    expect_error([&] { resolve_model(cache.file("nothere.gguf"), std::nullopt, cache.path()); }, ErrorKind::NotFound,
                 "model file '" + cache.file("nothere.gguf") + "' does not exist");
    expect_error([&] { resolve_model("nothere", std::nullopt, cache.path()); }, ErrorKind::NotFound, "does not exist");
    expect_error([&] { resolve_model(cache.path(), std::nullopt, cache.path()); }, ErrorKind::InvalidArgument,
                 "is a folder, not a model file");
}

TEST(HubCache, ListShowsConvertedModelsOnly) {
    TempDir cache;
    EXPECT_TRUE(talkbox::list_cached_models(cache.path()).empty());  // no models/ yet
    fs::create_directories(cache.file("models"));
    for (const char* name : {"Qwen--B-f16.gguf", "Qwen--A-q8_0.gguf", "Qwen--A-f32.gguf", "Qwen--A-q8_0.gguf.tmp-123",
                             "notes.txt", "plain-f16.gguf", "Qwen--A-q3.gguf", "Org--Name-With-Dashes-q4_k.gguf"}) {
        talkbox::testing::write_text(cache.file(std::string("models/") + name), "12345");
    }
    const auto models = talkbox::list_cached_models(cache.path());
    ASSERT_EQ(models.size(), 4u);
    EXPECT_EQ(models[0].repo_id, "Org/Name-With-Dashes");
    EXPECT_EQ(models[0].type, WeightType::Q4_K);
    EXPECT_EQ(models[1].repo_id, "Qwen/A");
    EXPECT_EQ(models[1].type, WeightType::F32);
    EXPECT_EQ(models[2].type, WeightType::Q8_0);
    EXPECT_EQ(models[3].repo_id, "Qwen/B");
    EXPECT_EQ(models[3].bytes, 5u);
    EXPECT_EQ(models[3].path, cache.file("models/Qwen--B-f16.gguf"));
}

TEST(HubCache, DefaultCacheFolder) {
    const char* saved = std::getenv("TALKBOX_HOME");
    const std::string keep = saved ? saved : "";
    setenv("TALKBOX_HOME", "/srv/talkbox", 1);
    EXPECT_EQ(talkbox::default_cache_dir(), "/srv/talkbox");
    unsetenv("TALKBOX_HOME");
    EXPECT_EQ(talkbox::default_cache_dir(), std::string(std::getenv("HOME")) + "/.cache/talkbox");
    if (saved) setenv("TALKBOX_HOME", keep.c_str(), 1);
}

TEST(HubDigest, Sha256KnownAnswersAndIncrementalUpdates) {
    using talkbox::hub::Digest;
    Digest empty(Digest::Kind::Sha256);
    EXPECT_EQ(empty.hex_digest(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    Digest abc(Digest::Kind::Sha256);
    abc.update("a", 1);
    abc.update("bc", 2);
    EXPECT_EQ(abc.hex_digest(), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

// FIPS 180 vectors, and git's own names: `git hash-object` of an empty file and of "hello\n".
TEST(HubDigest, Sha1KnownAnswersAndGitBlobIds) {
    using talkbox::hub::Digest;
    const auto sha1 = [](const std::string& s) {
        Digest d(Digest::Kind::Sha1);
        for (const char ch : s) d.update(&ch, 1);  // byte by byte: incremental updates agree
        return d.hex_digest();
    };
    EXPECT_EQ(sha1(""), "da39a3ee5e6b4b0d3255bfef95601890afd80709");
    EXPECT_EQ(sha1("abc"), "a9993e364706816aba3e25717850c26c9cd0d89d");
    EXPECT_EQ(sha1("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"), "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
    EXPECT_EQ(sha1(std::string(1000000, 'a')), "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
    EXPECT_EQ(talkbox::hub::git_blob_header(6), std::string("blob 6\0", 7));
    EXPECT_EQ(sha1(talkbox::hub::git_blob_header(0)), "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391");
    EXPECT_EQ(sha1(talkbox::hub::git_blob_header(6) + "hello\n"), "ce013625030ba8dba906f756967f9e9ca394464a");
}

TEST(HubHttp, PrintableReplacesControlBytesAndTruncates) {
    EXPECT_EQ(talkbox::printable("ok \x1b[31mred\x1b[0m\r\n\xc3\xa9"), "ok ?[31mred?[0m????");
    EXPECT_EQ(talkbox::printable(std::string(300, 'x')), std::string(200, 'x') + "...");
    EXPECT_EQ(talkbox::printable(std::string(200, 'x')), std::string(200, 'x'));
}

}  // namespace
