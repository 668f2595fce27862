// The strict torch.save (.pt zip) reader: the fixture's s3gen.pt / ve.pt / conds.pt give exactly the
// tensors of their .safetensors twins (views and non-contiguous strides included), and malformed
// archives or pickles fail with precise messages.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <map>

#include "convert/safetensors.h"
#include "convert/torch_checkpoint.h"
#include "support/test_support.h"
#include "talkbox/error.h"

using namespace talkbox;
using namespace std::string_literals;  // byte strings with embedded NULs
using talkbox::testing::chatterbox_fixture;

namespace {

std::string tiny(const std::string& f) { return chatterbox_fixture("tiny-multilingual/" + f); }

void expect_same(const TorchCheckpoint& pt, const SafetensorsFile& st, size_t expected) {
    size_t n = 0;
    for (const auto& t : st.tensors()) {
        SCOPED_TRACE(t.name);
        const SafetensorsTensor* p = pt.find(t.name);
        ASSERT_NE(p, nullptr);
        EXPECT_EQ(p->dtype, t.dtype);
        EXPECT_EQ(p->shape, t.shape);
        ASSERT_EQ(p->nbytes, t.nbytes);
        EXPECT_EQ(std::memcmp(p->data, t.data, t.nbytes), 0);
        ++n;
    }
    EXPECT_EQ(n, expected);
    EXPECT_EQ(pt.tensors().size(), expected);
}

// ---- a tiny torch.save writer for malformed inputs: stored ZIP entries under "archive/".
struct Entry {
    std::string name;
    std::string data;
    uint16_t method = 0;
};

void put16(std::string& s, uint32_t v) {
    s += static_cast<char>(v & 0xFF);
    s += static_cast<char>((v >> 8) & 0xFF);
}
void put32(std::string& s, uint32_t v) {
    put16(s, v & 0xFFFF);
    put16(s, v >> 16);
}

std::string make_zip(const std::vector<Entry>& entries) {
    std::string out, cd;
    for (const auto& e : entries) {
        const uint32_t offset = static_cast<uint32_t>(out.size());
        put32(out, 0x04034b50);
        put16(out, 20); put16(out, 0); put16(out, e.method); put16(out, 0); put16(out, 0);
        put32(out, 0); put32(out, static_cast<uint32_t>(e.data.size())); put32(out, static_cast<uint32_t>(e.data.size()));
        put16(out, static_cast<uint32_t>(e.name.size())); put16(out, 0);
        out += e.name;
        out += e.data;
        put32(cd, 0x02014b50);
        put16(cd, 20); put16(cd, 20); put16(cd, 0); put16(cd, e.method); put16(cd, 0); put16(cd, 0);
        put32(cd, 0); put32(cd, static_cast<uint32_t>(e.data.size())); put32(cd, static_cast<uint32_t>(e.data.size()));
        put16(cd, static_cast<uint32_t>(e.name.size())); put16(cd, 0); put16(cd, 0); put16(cd, 0); put16(cd, 0);
        put32(cd, 0); put32(cd, offset);
        cd += e.name;
    }
    const uint32_t cd_offset = static_cast<uint32_t>(out.size());
    out += cd;
    put32(out, 0x06054b50);
    put16(out, 0); put16(out, 0);
    put16(out, static_cast<uint32_t>(entries.size())); put16(out, static_cast<uint32_t>(entries.size()));
    put32(out, static_cast<uint32_t>(cd.size())); put32(out, cd_offset);
    put16(out, 0);
    return out;
}

// Pickle fragments (protocol 2, as torch.save writes them).
std::string str(const std::string& s) {
    std::string o = "X";
    put32(o, static_cast<uint32_t>(s.size()));
    return o + s;
}
std::string i1(int v) { return std::string("K") + static_cast<char>(v); }
const std::string kProto = "\x80\x02"s;
// A float tensor over storage `key` holding `numel` floats, with the given offset / size / stride.
std::string tensor(const std::string& key, int numel, int offset, const std::vector<int>& size, const std::vector<int>& stride) {
    std::string t = "ctorch._utils\n_rebuild_tensor_v2\n(";
    t += "(" + str("storage") + "ctorch\nFloatStorage\n" + str(key) + str("cpu") + i1(numel) + "tQ";
    t += i1(offset) + "(";
    for (int s : size) t += i1(s);
    t += "t(";
    for (int s : stride) t += i1(s);
    t += "t\x89" "ccollections\nOrderedDict\n)RtR";
    return t;
}
std::string dict_of(const std::string& key, const std::string& value) { return "}(" + str(key) + value + "u"; }

std::string floats(int n) {
    std::string s;
    for (int i = 0; i < n; ++i) {
        const float f = static_cast<float>(i);
        s.append(reinterpret_cast<const char*>(&f), 4);
    }
    return s;
}

std::string load_error(const std::string& image) {
    try {
        TorchCheckpoint(reinterpret_cast<const uint8_t*>(image.data()), image.size(), "m.pt");
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

std::string pickled(const std::string& pkl, const std::vector<Entry>& extra = {{"archive/data/0", floats(4)}}) {
    std::vector<Entry> entries = {{"archive/data.pkl", pkl}};
    entries.insert(entries.end(), extra.begin(), extra.end());
    return make_zip(entries);
}

}  // namespace

TEST(TorchCheckpoint, FixtureFilesEqualTheirSafetensorsTwins) {
    expect_same(TorchCheckpoint(tiny("s3gen.pt")), SafetensorsFile(tiny("s3gen.safetensors")), 1554);
    expect_same(TorchCheckpoint(tiny("ve.pt")), SafetensorsFile(tiny("ve.safetensors")), 16);
    // conds.pt: nested plain dicts, None fields, a view (prompt_token: 87 of 88 stored tokens) and a
    // non-contiguous tensor (prompt_feat: strides (14000, 1, 175)); the twin holds them contiguous.
    const TorchCheckpoint conds(tiny("conds.pt"));
    expect_same(conds, SafetensorsFile(tiny("conds.safetensors")), 7);
    const std::map<std::string, std::string> none = {
        {"t3.clap_emb", "None"}, {"t3.cond_prompt_speech_emb", "None"}, {"gen.prompt_feat_len", "None"}};
    EXPECT_EQ(conds.values(), none);
}

TEST(TorchCheckpoint, HandWrittenCheckpointWithViewsAndValues) {
    // {"a": tensor[2] at offset 1, "b": tensor[2,2] transposed, "n": [1, None, "s", True, 2.5]}
    const std::string pkl = kProto + "}(" + str("a") + tensor("0", 4, 1, {2}, {1}) + str("b") + tensor("0", 4, 0, {2, 2}, {1, 2}) +
                            str("n") + "](" + i1(1) + "N" + str("s") + "\x88"s + "G@\x04\x00\x00\x00\x00\x00\x00"s + "eu.";
    const std::string image = pickled(pkl);
    const TorchCheckpoint pt(reinterpret_cast<const uint8_t*>(image.data()), image.size(), "m.pt");
    ASSERT_EQ(pt.tensors().size(), 2u);
    const auto* a = pt.find("a");
    ASSERT_NE(a, nullptr);
    EXPECT_EQ(a->shape, (std::vector<int64_t>{2}));
    EXPECT_EQ(std::vector<float>(reinterpret_cast<const float*>(a->data), reinterpret_cast<const float*>(a->data) + 2),
              (std::vector<float>{1, 2}));
    const auto* b = pt.find("b");
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(std::vector<float>(reinterpret_cast<const float*>(b->data), reinterpret_cast<const float*>(b->data) + 4),
              (std::vector<float>{0, 2, 1, 3}));
    const std::map<std::string, std::string> values = {
        {"n.0", "1"}, {"n.1", "None"}, {"n.2", "s"}, {"n.3", "True"}, {"n.4", "2.5"}};
    EXPECT_EQ(pt.values(), values);
}

TEST(TorchCheckpoint, MalformedInputsFailPrecisely) {
    const std::string good = kProto + dict_of("w", tensor("0", 4, 0, {4}, {1})) + ".";
    ASSERT_EQ(load_error(pickled(good)), "(no error)");
    const std::string bad = "m.pt: not a valid PyTorch zip checkpoint: ";

    // ZIP level.
    EXPECT_EQ(load_error("PK"), bad + "file is too short for a ZIP archive (2 bytes)");
    const std::string image = pickled(good);
    EXPECT_EQ(load_error(image.substr(0, image.size() - 30)), bad + "no end-of-central-directory record (truncated file?)");
    std::string moved = image;  // central directory offset pointing past the end
    moved[moved.size() - 3] = '\x7F';
    EXPECT_NE(load_error(moved).find("central directory at byte "), std::string::npos) << load_error(moved);
    EXPECT_EQ(load_error(make_zip({{"archive/data.pkl", good, 8}})),
              bad + "entry 'archive/data.pkl' is compressed (method 8); torch.save writes stored entries only");
    EXPECT_EQ(load_error(make_zip({{"data.pkl", good}})),
              "m.pt: not a PyTorch zip checkpoint: entry 'data.pkl' is not inside a folder");
    EXPECT_EQ(load_error(make_zip({{"archive/version", "3\n"}})), "m.pt: not a PyTorch zip checkpoint: no 'archive/data.pkl' entry");
    EXPECT_EQ(load_error(pickled(good, {{"archive/data/0", floats(4)}, {"archive/byteorder", "big"}})),
              "m.pt: storages are stored in 'big' byte order (only little-endian is supported)");

    // Pickle level.
    const std::string where = "m.pt: archive/data.pkl";
    EXPECT_EQ(load_error(pickled(kProto + "\xff")), where + " byte 2: unsupported pickle opcode 0xff");
    EXPECT_EQ(load_error(pickled(kProto + "cos\nsystem\n)R.")),
              where + " byte 2: refusing global 'os.system' (only tensors, dicts, lists, numbers and strings may be loaded)");
    EXPECT_EQ(load_error(pickled(kProto + "ctorch\nTensor\n.")),
              where + " byte 2: refusing global 'torch.Tensor' (only tensors, dicts, lists, numbers and strings may be loaded)");
    EXPECT_EQ(load_error(pickled(kProto + "}")), where + ": ends without STOP");
    EXPECT_EQ(load_error(pickled(kProto + "X\x10\x00\x00\x00" "ab"s)), where + ": truncated pickle (needs 16 bytes at byte 7)");
    EXPECT_EQ(load_error(pickled(kProto + "s")), where + " byte 2: stack underflow");
    EXPECT_EQ(load_error(pickled(kProto + "h\x05")), where + " byte 2: memo key 5 was never stored");
    EXPECT_EQ(load_error(pickled(kProto + "]" + i1(1) + i1(2) + "s.")), where + " byte 7: setting an item of a list (only dicts)");
    EXPECT_EQ(load_error(pickled(kProto + "](" + i1(1) + "t.")), where + " byte 7: STOP with 1 values left on the stack");
    EXPECT_EQ(load_error(pickled(kProto + "](" + i1(1) + "e.")), "m.pt: the pickled object is a list, expected a dict");
    EXPECT_EQ(load_error(pickled(kProto + dict_of("w", tensor("0", 100, 0, {4}, {1})) + ".")),
              where + " byte 94: storage '0' claims 100 elements but its entry holds 16 bytes");
    EXPECT_EQ(load_error(pickled(kProto + dict_of("w", tensor("7", 4, 0, {4}, {1})) + ".")),
              where + " byte 94: storage '7' has no data entry in the archive");
    EXPECT_EQ(load_error(pickled(kProto + dict_of("w", tensor("0", 4, 1, {4}, {1})) + ".")),
              where + " byte 134: tensor reaches element 4 of storage '0', which holds 4");
    EXPECT_EQ(load_error(pickled(kProto + dict_of("w", tensor("0", 4, 0, {2, 2}, {2})) + ".")),
              where + " byte 136: tensor size and stride have different lengths");
    EXPECT_EQ(load_error(pickled(kProto + dict_of("w", tensor("0", 4, 0, {100, 100}, {0, 0})) + ".")),
              where + " byte 138: tensor of 10000 elements views only 4 stored elements (an expanded view); save it with "
                      ".contiguous()");
    // A dict that contains itself: refused (no endless recursion, no leak).
    EXPECT_EQ(load_error(pickled(kProto + "}q\x00"s + str("me") + "h\x00s."s)),
              "m.pt: objects nested deeper than 16 levels at 'me.me.me.me.me.me.me.me.me.me.me.me.me.me.me.me.me'");
}

TEST(TorchCheckpoint, FuzzCorpusFilesLoad) {
    // The fuzz corpus (torch-style ZIP64 records, 64-byte aligned entries, OrderedDict + BUILD,
    // LongStorage scalar, nested dicts, views): the seeds must take the success path.
    const std::string dir = std::string(TALKBOX_SOURCE_DIR) + "/fuzz/corpus/torch_checkpoint/";
    const TorchCheckpoint sd(dir + "state_dict.pt");
    ASSERT_EQ(sd.tensors().size(), 2u);
    EXPECT_EQ(sd.find("w")->shape, (std::vector<int64_t>{2, 2}));
    const auto* n = sd.find("n");
    ASSERT_NE(n, nullptr);
    EXPECT_EQ(n->dtype, SafetensorsDtype::I64);
    EXPECT_TRUE(n->shape.empty());
    int64_t v;
    std::memcpy(&v, n->data, 8);
    EXPECT_EQ(v, 8);
    const TorchCheckpoint nested(dir + "nested.pt");
    EXPECT_EQ(nested.tensors().size(), 2u);
    const auto* feat = nested.find("gen.feat");
    ASSERT_NE(feat, nullptr);
    EXPECT_EQ(std::vector<float>(reinterpret_cast<const float*>(feat->data), reinterpret_cast<const float*>(feat->data) + 4),
              (std::vector<float>{1, 3, 2, 4}));
    const std::map<std::string, std::string> values = {
        {"t3.clap", "None"}, {"gen.len", "None"}, {"gen.list.0", "1"}, {"gen.list.1", "2.5"}, {"gen.list.2", "True"}};
    EXPECT_EQ(nested.values(), values);
}
