// Crafted .pt checkpoints (pickle and ZIP container) through `talkbox convert` of a Chatterbox
// folder whose s3gen.pt is replaced.
#include <gtest/gtest.h>

#include "convert/crafted/crafted.h"
#include "support/test_support.h"

namespace talkbox::crafted {
namespace {

using namespace std::string_literals;

// ---- pickle fragments (protocol 2, as torch.save writes them)
std::string str(const std::string& s) {
    std::string o = "X";
    put32(o, static_cast<uint32_t>(s.size()));
    return o + s;
}
std::string i1(int v) { return std::string("K") + static_cast<char>(v); }
std::string put(uint32_t key) {
    std::string o = "r";  // LONG_BINPUT
    put32(o, key);
    return o;
}
std::string get(uint32_t key) {
    std::string o = "j";  // LONG_BINGET
    put32(o, key);
    return o;
}
std::string repeat(const std::string& s, size_t n) {
    std::string o;
    o.reserve(s.size() * n);
    for (size_t i = 0; i < n; ++i) o += s;
    return o;
}
const std::string kProto = "\x80\x02"s;
// {"w": <value>}
std::string state_dict(const std::string& value) { return kProto + "}" + str("w") + value + "s."; }
// A float tensor over storage "0" of `numel` floats.
std::string tensor(int numel, const std::vector<int>& size, const std::vector<int>& stride, int offset = 0) {
    std::string t = "ctorch._utils\n_rebuild_tensor_v2\n(";
    t += "(" + str("storage") + "ctorch\nFloatStorage\n" + str("0") + str("cpu") + "J";
    put32(t, static_cast<uint32_t>(numel));
    t += "tQ" + i1(offset) + "(";
    for (int s : size) t += "J", put32(t, static_cast<uint32_t>(s));
    t += "t(";
    for (int s : stride) t += "J", put32(t, static_cast<uint32_t>(s));
    t += "t\x89" "ccollections\nOrderedDict\n)RtR";
    return t;
}

// ---- a ZIP writer with the offsets tests patch
struct Entry {
    std::string name, data;
};
struct Zip {
    std::string bytes;
    std::vector<size_t> local, central;  // each entry's local header / central directory record
    size_t cd_offset = 0, eocd = 0;
};
Zip make_zip(const std::vector<Entry>& entries) {
    Zip z;
    std::string cd;
    for (const auto& e : entries) {
        z.local.push_back(z.bytes.size());
        std::string& o = z.bytes;
        put32(o, 0x04034b50);
        put16(o, 20), put16(o, 0), put16(o, 0), put16(o, 0), put16(o, 0);
        put32(o, 0), put32(o, static_cast<uint32_t>(e.data.size())), put32(o, static_cast<uint32_t>(e.data.size()));
        put16(o, static_cast<uint32_t>(e.name.size())), put16(o, 0);
        o += e.name + e.data;
        z.central.push_back(cd.size());
        put32(cd, 0x02014b50);
        put16(cd, 20), put16(cd, 20), put16(cd, 0), put16(cd, 0), put16(cd, 0), put16(cd, 0);
        put32(cd, 0), put32(cd, static_cast<uint32_t>(e.data.size())), put32(cd, static_cast<uint32_t>(e.data.size()));
        put16(cd, static_cast<uint32_t>(e.name.size())), put16(cd, 0), put16(cd, 0), put16(cd, 0), put16(cd, 0);
        put32(cd, 0), put32(cd, static_cast<uint32_t>(z.local.back()));
        cd += e.name;
    }
    z.cd_offset = z.bytes.size();
    for (auto& c : z.central) c += z.cd_offset;
    z.bytes += cd;
    z.eocd = z.bytes.size();
    put32(z.bytes, 0x06054b50);
    put16(z.bytes, 0), put16(z.bytes, 0);
    put16(z.bytes, static_cast<uint32_t>(entries.size())), put16(z.bytes, static_cast<uint32_t>(entries.size()));
    put32(z.bytes, static_cast<uint32_t>(cd.size())), put32(z.bytes, static_cast<uint32_t>(z.cd_offset));
    put16(z.bytes, 0);
    return z;
}
void patch32(std::string& b, size_t at, uint32_t v) {
    std::string p;
    put32(p, v);
    b.replace(at, 4, p);
}
std::string floats(size_t n) { return std::string(n * 4, '\0'); }
Zip checkpoint(const std::string& pkl, size_t storage_floats = 4) {
    return make_zip({{"archive/data.pkl", pkl}, {"archive/data/0", floats(storage_floats)}});
}

class CraftedTorch : public ::testing::Test {
protected:
    void SetUp() override {
        dir_ = tmp_.file("folder");
        link_tree(testing::chatterbox_fixture("tiny-multilingual"), dir_);
        pt_ = dir_ + "/s3gen.pt";
    }
    void expect(const std::string& image, const std::string& problem) {
        write(pt_, image);
        expect_refused(run_talkbox({"convert", dir_, "-o", tmp_.file("out.gguf")}), pt_, problem);
    }
    void expect_pickle(const std::string& pkl, const std::string& problem) { expect(checkpoint(pkl).bytes, problem); }

    testing::TempDir tmp_;
    std::string dir_, pt_;
};

}  // namespace

// ---- pickle

TEST_F(CraftedTorch, ListsNestedNearlyAMillionLevels) {
    // 900000 empty lists appended each into the one below: the value is as deep as the stack allows.
    const size_t n = 900000;
    expect_pickle(kProto + "}" + str("w") + std::string(n, ']') + std::string(n - 1, 'a') + "s.",
                  "objects nested deeper than 16 levels at 'w.0.0.0.0");
}

TEST_F(CraftedTorch, TwoMillionOpenLists) {
    expect_pickle(kProto + std::string(2000000, ']') + ".", "the pickle builds more than 1048576 values");
}

TEST_F(CraftedTorch, TuplesNestedThroughMarks) {
    // ((((...)))) built with MARK/TUPLE: 500000 levels.
    const size_t n = 500000;
    expect_pickle(kProto + "}" + str("w") + std::string(n, '(') + std::string(n, 't') + "s.",
                  "objects nested deeper than 16 levels");
}

TEST_F(CraftedTorch, MemoReferencesFanOutExponentially) {
    // {"w": [L0, ..., L8]} with L0 = [0] and L(k+1) = 64 references to Lk: 64^8 = 2.8e14 leaves in ~3 KB.
    std::string p = kProto + "}" + str("w") + "]" + "]" + i1(0) + "a" + put(0) + "a";
    for (uint32_t k = 1; k <= 8; ++k) p += "](" + repeat(get(k - 1), 64) + "e" + put(k) + "a";
    expect_pickle(p + "s.", "values and key bytes (memo references fanning out?)");
}

TEST_F(CraftedTorch, OneLongStringReferencedManyTimes) {
    // A list of a 1 MB string and 100000 references to it: 100 GB of values.
    const std::string p = kProto + "}" + str("w") + "](" + str(std::string(1 << 20, 'x')) + put(0) +
                          repeat(get(0), 100000) + "es.";
    expect_pickle(p, "values and key bytes (memo references fanning out?)");
}

TEST_F(CraftedTorch, OneLongKeyAtEveryLevel) {
    // {"w": {K: {K: ... 15 dicts ... [1] * 10000}}} with one 1 MB key K: 10000 keys of 15 MB each.
    std::string p = kProto + "}" + str("w") + "}" + str(std::string(1 << 20, 'k')) + put(0);
    for (int d = 1; d < 15; ++d) p += "}" + get(0);
    p += "](" + repeat(i1(1), 10000) + "e" + std::string(16, 's');
    expect_pickle(p + ".", "values and key bytes (memo references fanning out?) at 'w.kkkk");
}

TEST_F(CraftedTorch, DictContainingItself) {
    expect_pickle(kProto + "}" + put(0) + str("me") + get(0) + "s.", "objects nested deeper than 16 levels at 'me.me.me");
}

TEST_F(CraftedTorch, NonContiguousViewsCopiedOverAndOver) {
    // 200 distinct transposed views of one 1 MB storage: 200 MB of copies from a 1 MB file.
    const std::string t = tensor(512 * 512, {512, 512}, {1, 512});
    std::string p = kProto + "}(";
    for (int i = 0; i < 200; ++i) p += str("t" + std::to_string(i)) + t;
    expect(checkpoint(p + "u.", 512 * 512).bytes, "non-contiguous tensors would copy out more than the archive's");
}

TEST_F(CraftedTorch, TooManyValues) {
    // 1.1 million Nones appended to one list, a thousand at a time.
    expect_pickle(state_dict("]" + repeat("(" + std::string(1000, 'N') + "e", 1100)), "the pickle builds more than 1048576 values");
}

TEST_F(CraftedTorch, TooManyMemoEntries) {
    std::string p = kProto + "N";
    for (uint32_t k = 0; k <= (1u << 20); ++k) p += put(k);
    expect_pickle(p + ".", "more than 1048576 memo entries");
}

TEST_F(CraftedTorch, StringLongerThanThePickle) {
    expect_pickle(kProto + "X\xff\xff\xff\xff" "abc"s, "truncated pickle (needs 4294967295 bytes at byte 7)");
}

TEST_F(CraftedTorch, CodeExecutingGlobal) {
    expect_pickle(kProto + "cos\nsystem\n(" + str("touch /tmp/pwned") + "tR.", "refusing global 'os.system'");
}

TEST_F(CraftedTorch, TensorShapeOfAnExabyte) {
    expect_pickle(state_dict(tensor(4, {1 << 30, 1 << 30, 1 << 30}, {0, 0, 0})), "tensor is too large");
}

TEST_F(CraftedTorch, TensorPastItsStorage) {
    expect_pickle(state_dict(tensor(4, {4, 4}, {4, 1})), "tensor reaches element 15 of storage '0', which holds 4");
}

TEST_F(CraftedTorch, StorageClaimsMoreThanItsEntry) {
    expect_pickle(state_dict(tensor(1 << 30, {4}, {1})), "storage '0' claims 1073741824 elements but its entry holds 16 bytes");
}

// ---- ZIP container

TEST_F(CraftedTorch, ZipEntryCountBeyondTheCentralDirectory) {
    // ZIP64: 2^60 entries declared in a central directory of ~100 bytes.
    Zip z = checkpoint(state_dict("N"));
    std::string z64;
    const uint64_t z64_at = z.eocd;
    put32(z64, 0x06064b50), put64(z64, 44), put16(z64, 45), put16(z64, 45), put32(z64, 0), put32(z64, 0);
    put64(z64, uint64_t{1} << 60), put64(z64, uint64_t{1} << 60), put64(z64, z.eocd - z.cd_offset), put64(z64, z.cd_offset);
    put32(z64, 0x07064b50), put32(z64, 0), put64(z64, z64_at), put32(z64, 1);
    std::string eocd = z.bytes.substr(z.eocd);
    patch32(eocd, 8, 0xFFFFFFFF);  // both entry counts saturated
    z.bytes = z.bytes.substr(0, z.eocd) + z64 + eocd;
    expect(z.bytes, "cannot hold 1152921504606846976 entries");
}

TEST_F(CraftedTorch, Zip64LocatorMissing) {
    Zip z = checkpoint(state_dict("N"));
    patch32(z.bytes, z.eocd + 16, 0xFFFFFFFF);
    expect(z.bytes, "ZIP64 end-of-central-directory locator missing");
}

TEST_F(CraftedTorch, CentralDirectoryPastTheEnd) {
    Zip z = checkpoint(state_dict("N"));
    patch32(z.bytes, z.eocd + 16, 0x7FFFFFF0);
    expect(z.bytes, "central directory at byte 2147483632 runs past the end of the file");
}

TEST_F(CraftedTorch, EntryDeclaresExabytes) {
    // ZIP64 extra field: data.pkl claims 2^62 bytes.
    Zip z = checkpoint(state_dict("N"));
    std::string b = z.bytes;
    std::string extra;
    put16(extra, 1), put16(extra, 16), put64(extra, uint64_t{1} << 62), put64(extra, uint64_t{1} << 62);
    const size_t rec = z.central[0];
    patch32(b, rec + 20, 0xFFFFFFFF), patch32(b, rec + 24, 0xFFFFFFFF);
    b[rec + 30] = static_cast<char>(extra.size());
    const size_t name_end = rec + 46 + std::string("archive/data.pkl").size();
    b.insert(name_end, extra);
    patch32(b, b.size() - 22 + 12, static_cast<uint32_t>(b.size() - 22 - z.cd_offset));
    expect(b, "data of 'archive/data.pkl' at byte 46 runs past the end of the file");
}

TEST_F(CraftedTorch, LocalHeaderPastTheEnd) {
    Zip z = checkpoint(state_dict("N"));
    patch32(z.bytes, z.central[1] + 42, 0x10000000);
    expect(z.bytes, "local header of 'archive/data/0' at byte 268435456 runs past the end");
}

TEST_F(CraftedTorch, EntriesOverlap) {
    // The storage entry's record points at data.pkl's local header.
    Zip z = checkpoint(state_dict("N"));
    patch32(z.bytes, z.central[1] + 42, static_cast<uint32_t>(z.local[0]));
    expect(z.bytes, "and 'archive/data/0' (from byte 0) overlap");
}

TEST_F(CraftedTorch, DataReachesIntoTheCentralDirectory) {
    Zip z = checkpoint(state_dict("N"));
    const uint32_t size = static_cast<uint32_t>(z.cd_offset - z.local[1] - 30 - 14 + 8);
    patch32(z.bytes, z.central[1] + 20, size), patch32(z.bytes, z.central[1] + 24, size);
    expect(z.bytes, "data of 'archive/data/0' reaches into the central directory");
}

TEST_F(CraftedTorch, CompressedEntry) {
    Zip z = checkpoint(state_dict("N"));
    z.bytes[z.central[0] + 10] = 8;
    expect(z.bytes, "entry 'archive/data.pkl' is compressed (method 8)");
}

TEST_F(CraftedTorch, NameRunsPastTheCentralDirectory) {
    Zip z = checkpoint(state_dict("N"));
    z.bytes[z.central[1] + 28] = '\xff', z.bytes[z.central[1] + 29] = '\x7f';
    expect(z.bytes, "central directory entry 1 runs past the central directory");
}

TEST_F(CraftedTorch, DuplicateEntry) {
    expect(make_zip({{"archive/data.pkl", state_dict("N")}, {"archive/data.pkl", state_dict("N")}}).bytes,
           "entry 'archive/data.pkl' appears twice");
}

TEST_F(CraftedTorch, TruncatedArchive) {
    const Zip z = checkpoint(state_dict("N"));
    expect(z.bytes.substr(0, z.bytes.size() - 10), "no end-of-central-directory record");
}

}  // namespace talkbox::crafted
