// Converting every tiny checkpoint to every weight type, and reading the GGUF back: tensors equal
// the source exactly where the type holds its values, within the type's rounding or quantisation
// bound otherwise, and every hyper-parameter and map matches config.json.
#include <gtest/gtest.h>

#include <cstring>

#include <cmath>
#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "convert/safetensors.h"
#include "qwen3tts/checkpoint_names.h"
#include "convert/weight_type.h"
#include "core/gguf_file.h"
#include "core/json_file.h"
#include "qwen3tts/hparams.h"
#include "support/test_support.h"
#include "talkbox/convert.h"

namespace fs = std::filesystem;
using namespace talkbox;
using talkbox::testing::TempDir;

namespace {

std::vector<float> dequantize(const GgufTensorInfo& t) {
    size_t n = 1;
    for (int64_t d : t.shape) n *= static_cast<size_t>(d);
    std::vector<float> out(n);
    if (t.type == GGML_TYPE_F32) {
        std::memcpy(out.data(), t.data, n * 4);
    } else {
        ggml_get_type_traits(t.type)->to_float(t.data, out.data(), static_cast<int64_t>(n));
    }
    return out;
}

// Largest error the stored type may introduce on element i of `src`, rows of `row` elements.
class ErrorBound {
public:
    ErrorBound(ggml_type type, const std::vector<float>& src, int64_t row) : type_(type), src_(src), row_(row) {}
    float at(size_t i) const {
        const float x = std::fabs(src_[i]);
        switch (type_) {
            case GGML_TYPE_F16: return std::max(x * 0x1p-11f, 0x1p-25f);  // half an F16 ulp
            case GGML_TYPE_BF16: return x * 0x1p-8f;                       // half a BF16 ulp
            case GGML_TYPE_Q8_0: {
                // round(x/d)·d with d = amax/127 stored as F16: half a step plus 127 × d's rounding.
                const float amax = block_amax(i, 32);
                return amax * (1.0f / 254 + 1.0f / 2048) + 1e-7f;
            }
            case GGML_TYPE_Q4_K: {
                // 4-bit codes in 32-element sub-blocks whose 6-bit scales/mins are relative to the
                // 256-element super-block: at worst one full step of the widest sub-block.
                const size_t start = i - (i % static_cast<size_t>(row_)) + ((i % row_) / 256) * 256;
                float lo = src_[start], hi = src_[start];
                for (size_t k = start; k < start + 256; ++k) lo = std::min(lo, src_[k]), hi = std::max(hi, src_[k]);
                return (hi - lo) / 15.0f + 1e-6f;
            }
            default: return 0.0f;
        }
    }

private:
    float block_amax(size_t i, size_t block) const {
        const size_t start = i - i % block;
        float m = 0;
        for (size_t k = start; k < start + block; ++k) m = std::max(m, std::fabs(src_[k]));
        return m;
    }
    ggml_type type_;
    const std::vector<float>& src_;
    int64_t row_;
};

void expect_tensor_round_trips(const SafetensorsTensor& src, const GgufTensorInfo& dst, const std::string& label) {
    std::vector<float> want(static_cast<size_t>(src.element_count()));
    safetensors_to_f32(src, want.data());
    const bool exact = dst.type == GGML_TYPE_F32 || (dst.type == GGML_TYPE_BF16 && src.dtype == SafetensorsDtype::BF16);
    if (exact) {
        // Bit-for-bit: compare the raw bytes where the types agree, the float values otherwise.
        if (dst.type == GGML_TYPE_BF16) {
            ASSERT_EQ(0, std::memcmp(src.data, dst.data, src.nbytes)) << label;
        } else {
            ASSERT_EQ(0, std::memcmp(want.data(), dst.data, want.size() * 4)) << label;
        }
        return;
    }
    const auto got = dequantize(dst);
    ASSERT_EQ(got.size(), want.size()) << label;
    const ErrorBound bound(dst.type, want, dst.shape[0]);
    for (size_t i = 0; i < want.size(); ++i) {
        ASSERT_LE(std::fabs(got[i] - want[i]), bound.at(i))
            << label << " element " << i << ": " << got[i] << " vs " << want[i] << " (" << ggml_type_name(dst.type) << ")";
    }
}

std::map<std::string, const SafetensorsTensor*> index_sources(const std::vector<std::unique_ptr<SafetensorsFile>>& files) {
    std::map<std::string, const SafetensorsTensor*> out;
    for (const auto& f : files)
        for (const auto& t : f->tensors()) out[qwen3tts::gguf_tensor_name(t.name)] = &t;
    return out;
}

class ConvertRoundTrip : public ::testing::TestWithParam<std::tuple<std::string, WeightType>> {};

}  // namespace

TEST_P(ConvertRoundTrip, TensorsAndMetadataMatchTheSnapshot) {
    const auto& [checkpoint, type] = GetParam();
    const std::string dir = talkbox::testing::qwen_fixture(checkpoint);
    TempDir tmp;
    const std::string out = tmp.file("model.gguf");
    size_t progress_calls = 0;
    const ConvertSummary summary = convert_snapshot({dir, out, type, [&](size_t, size_t, const std::string&) { ++progress_calls; }});

    std::vector<std::unique_ptr<SafetensorsFile>> sources;
    sources.push_back(std::make_unique<SafetensorsFile>(dir + "/model.safetensors"));
    sources.push_back(std::make_unique<SafetensorsFile>(dir + "/speech_tokenizer/model.safetensors"));
    const auto by_name = index_sources(sources);

    GgufFile gguf(out);
    ASSERT_EQ(gguf.tensors().size(), by_name.size()) << "every source tensor, and nothing else";
    EXPECT_EQ(summary.tensor_count, by_name.size());
    EXPECT_EQ(progress_calls, by_name.size());
    EXPECT_EQ(summary.file_bytes, fs::file_size(out));
    for (const auto& t : gguf.tensors()) {
        ASSERT_TRUE(by_name.count(t.name)) << t.name;
        const SafetensorsTensor& src = *by_name.at(t.name);
        EXPECT_EQ(t.type, storage_type(t.name, std::vector<int64_t>(src.shape.rbegin(), src.shape.rend()), type)) << t.name;
        expect_tensor_round_trips(src, t, checkpoint + "/" + t.name);
    }

    // Metadata: read back through the loader's reader and compare with the JSON files.
    const auto h = qwen3tts::Hparams::from_gguf(gguf.meta());
    const auto config = read_json_file(dir + "/config.json");
    const auto& tc = config["talker_config"];
    const auto& cp = tc["code_predictor_config"];
    EXPECT_EQ(gguf.meta().get_string("general.architecture"), "qwen3tts");
    EXPECT_EQ(gguf.meta().get_string("qwen3tts.weight_type"), weight_type_name(type));
    EXPECT_EQ(qwen3tts::variant_name(h.variant), config["tts_model_type"].get<std::string>());
    EXPECT_EQ(h.size, config["tts_model_size"] == "0b6" ? "0.6b" : "1.7b");
    EXPECT_EQ(h.tts_pad_id, config["tts_pad_token_id"].get<uint32_t>());
    EXPECT_EQ(h.tts_bos_id, config["tts_bos_token_id"].get<uint32_t>());
    EXPECT_EQ(h.tts_eos_id, config["tts_eos_token_id"].get<uint32_t>());
    EXPECT_EQ(h.im_start_id, config["im_start_token_id"].get<uint32_t>());
    EXPECT_EQ(h.assistant_id, config["assistant_token_id"].get<uint32_t>());
    EXPECT_EQ(h.talker.hidden, tc["hidden_size"].get<uint32_t>());
    EXPECT_EQ(h.talker.layers, tc["num_hidden_layers"].get<uint32_t>());
    EXPECT_EQ(h.talker.kv_heads, tc["num_key_value_heads"].get<uint32_t>());
    EXPECT_FLOAT_EQ(h.talker.rope_theta, tc["rope_theta"].get<float>());
    EXPECT_EQ(h.mrope_section, tc["rope_scaling"]["mrope_section"].get<std::vector<int32_t>>());
    EXPECT_EQ(h.codec_eos_id, tc["codec_eos_token_id"].get<uint32_t>());
    EXPECT_EQ(h.codec_think_bos_id, tc["codec_think_bos_id"].get<uint32_t>());
    EXPECT_EQ(h.code_predictor.hidden, cp["hidden_size"].get<uint32_t>());
    EXPECT_EQ(h.code_predictor.vocab, cp["vocab_size"].get<uint32_t>());
    ASSERT_EQ(h.speaker_names.size(), tc["spk_id"].size());
    for (size_t i = 0; i < h.speaker_names.size(); ++i) {
        EXPECT_EQ(h.speaker_ids[i], tc["spk_id"][h.speaker_names[i]].get<int32_t>());
        const auto& d = tc["spk_is_dialect"][h.speaker_names[i]];
        EXPECT_EQ(h.speaker_dialects[i], d.is_string() ? d.get<std::string>() : "");
    }
    ASSERT_EQ(h.language_names.size(), tc["codec_language_id"].size());
    for (size_t i = 0; i < h.language_names.size(); ++i) {
        EXPECT_EQ(h.language_ids[i], tc["codec_language_id"][h.language_names[i]].get<int32_t>());
    }
    const auto gen = read_json_file(dir + "/generation_config.json");
    EXPECT_FLOAT_EQ(h.generation.temperature, gen["temperature"].get<float>());
    EXPECT_FLOAT_EQ(h.generation.repetition_penalty, gen["repetition_penalty"].get<float>());
    EXPECT_EQ(h.generation.top_k, gen["top_k"].get<uint32_t>());
    EXPECT_EQ(h.generation.max_new_tokens, gen["max_new_tokens"].get<uint32_t>());
    EXPECT_EQ(h.generation.subtalker_do_sample, gen["subtalker_dosample"].get<bool>());
    const auto st = read_json_file(dir + "/speech_tokenizer/config.json");
    EXPECT_EQ(h.codec_decoder.latent_dim, st["decoder_config"]["latent_dim"].get<uint32_t>());
    EXPECT_EQ(h.codec_decoder.upsample_rates, st["decoder_config"]["upsample_rates"].get<std::vector<int32_t>>());
    EXPECT_EQ(h.codec_decoder.sliding_window, st["decoder_config"]["sliding_window"].get<uint32_t>());
    EXPECT_EQ(h.codec_encoder.num_quantizers, st["encoder_config"]["num_quantizers"].get<uint32_t>());
    EXPECT_FLOAT_EQ(h.codec_encoder.frame_rate, st["encoder_config"]["_frame_rate"].get<float>());
    EXPECT_EQ(h.codec_samples_per_frame, st["decode_upsample_rate"].get<uint32_t>());
    EXPECT_EQ(h.has_speaker_encoder, h.variant == qwen3tts::Variant::Base);
    if (h.has_speaker_encoder) {
        EXPECT_EQ(h.speaker_encoder.enc_dim, config["speaker_encoder_config"]["enc_dim"].get<uint32_t>());
        EXPECT_EQ(h.speaker_encoder.channels, config["speaker_encoder_config"]["enc_channels"].get<std::vector<int32_t>>());
    }

    // Tokenizer: every vocab.json entry at its id, added tokens typed, merges in order.
    const auto tokens = gguf.meta().get_string_array("tokenizer.ggml.tokens");
    const auto types = gguf.meta().get_i32_array("tokenizer.ggml.token_type");
    const auto vocab = read_json_file(dir + "/vocab.json");
    ASSERT_EQ(tokens.size(), types.size());
    for (auto it = vocab.begin(); it != vocab.end(); ++it) ASSERT_EQ(tokens.at(it.value().get<size_t>()), it.key());
    EXPECT_EQ(tokens.at(151671), "<tts_pad>");
    EXPECT_EQ(tokens.at(151644), "<|im_start|>");
    EXPECT_EQ(types.at(151644), 3);
    EXPECT_EQ(gguf.meta().get_u32("tokenizer.ggml.eos_token_id"), 151645u);
    const auto merges = gguf.meta().get_string_array("tokenizer.ggml.merges");
    EXPECT_EQ(merges.size(), 151387u);
    EXPECT_EQ(merges.front(), "Ġ Ġ");
}

INSTANTIATE_TEST_SUITE_P(AllCheckpointsAllTypes, ConvertRoundTrip,
                         ::testing::Combine(::testing::ValuesIn(talkbox::testing::qwen_checkpoints()),
                                            ::testing::Values(WeightType::F32, WeightType::F16, WeightType::BF16,
                                                              WeightType::Q8_0, WeightType::Q4_K)),
                         [](const auto& info) {
                             std::string n = std::get<0>(info.param) + "_" + weight_type_name(std::get<1>(info.param));
                             for (auto& c : n)
                                 if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                             return n;
                         });

TEST(WeightPolicy, LargeMatricesTakeTheTypeSmallTensorsStayF32) {
    EXPECT_EQ(storage_type("talker.blk.0.attn_q.weight", {1024, 2048}, WeightType::Q4_K), GGML_TYPE_Q4_K);
    EXPECT_EQ(storage_type("talker.blk.0.attn_q.weight", {64, 128}, WeightType::Q4_K), GGML_TYPE_Q8_0);
    EXPECT_EQ(storage_type("talker.text_proj.fc1.weight", {16, 16}, WeightType::Q8_0), GGML_TYPE_F16);
    EXPECT_EQ(storage_type("talker.blk.0.attn_norm.weight", {1024}, WeightType::Q8_0), GGML_TYPE_F32);
    EXPECT_EQ(storage_type("codec.dec.wav.1.2.conv1.weight", {7, 768, 768}, WeightType::Q8_0), GGML_TYPE_F32);
    EXPECT_EQ(storage_type("codec.dec.rvq_first.cb.0.embed_sum", {256, 2048}, WeightType::F16), GGML_TYPE_F32);
    EXPECT_EQ(storage_type("talker.text_embd.weight", {2048, 151936}, WeightType::BF16), GGML_TYPE_BF16);
}

// The fixtures are too narrow for Q4_K's 256-element blocks; check it on a full-width matrix.
TEST(WeightPolicy, Q4KAndQ8RoundTripOnFullWidthRows) {
    std::vector<uint8_t> bytes(2 * 512 * 2);
    for (size_t i = 0; i < 1024; ++i) {
        const float v = std::sin(0.37f * static_cast<float>(i)) * (1.0f + static_cast<float>(i % 7));
        const ggml_bf16_t b = ggml_fp32_to_bf16(v);
        std::memcpy(&bytes[2 * i], &b, 2);
    }
    const auto file_bytes = talkbox::testing::make_safetensors({{"w", "BF16", {2, 512}, bytes}});
    SafetensorsFile f(file_bytes.data(), file_bytes.size(), "mem");
    for (ggml_type type : {GGML_TYPE_Q4_K, GGML_TYPE_Q8_0, GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_F32}) {
        std::vector<uint8_t> out;
        std::vector<float> scratch;
        encode_weights(*f.find("w"), type, 512, out, scratch);
        ASSERT_EQ(out.size(), ggml_row_size(type, 512) * 2);
        GgufTensorInfo info{"w", type, {512, 2}, out.data(), out.size()};
        expect_tensor_round_trips(*f.find("w"), info, std::string("w as ") + ggml_type_name(type));
    }
}

TEST(ConvertLayouts, ShardedCheckpointGivesTheSameFile) {
    const std::string src = talkbox::testing::qwen_fixture("tiny-1.7B-Base");
    TempDir tmp;
    const std::string single_dir = tmp.file("a/snap"), sharded_dir = tmp.file("b/snap");
    fs::create_directories(tmp.file("a"));
    fs::create_directories(tmp.file("b"));
    talkbox::testing::copy_tree(src, single_dir);
    talkbox::testing::copy_tree(src, sharded_dir);
    fs::remove(sharded_dir + "/model.safetensors");

    // Split the model's tensors over two shards and write the index that names them.
    SafetensorsFile whole(src + "/model.safetensors");
    std::vector<talkbox::testing::RawTensor> shard[2];
    nlohmann::json index = {{"metadata", {{"total_size", 0}}}, {"weight_map", nlohmann::json::object()}};
    size_t k = 0;
    for (const auto& t : whole.tensors()) {
        const int s = (k++ % 2);
        shard[s].push_back({t.name, safetensors_dtype_name(t.dtype), t.shape, std::vector<uint8_t>(t.data, t.data + t.nbytes)});
        index["weight_map"][t.name] = "model-0000" + std::to_string(s + 1) + "-of-00002.safetensors";
    }
    talkbox::testing::write_file(sharded_dir + "/model-00001-of-00002.safetensors", talkbox::testing::make_safetensors(shard[0]));
    talkbox::testing::write_file(sharded_dir + "/model-00002-of-00002.safetensors", talkbox::testing::make_safetensors(shard[1]));
    talkbox::testing::write_text(sharded_dir + "/model.safetensors.index.json", index.dump(2));

    convert_snapshot({single_dir, tmp.file("single.gguf"), WeightType::Q8_0, nullptr});
    convert_snapshot({sharded_dir, tmp.file("sharded.gguf"), WeightType::Q8_0, nullptr});
    EXPECT_EQ(talkbox::testing::read_text(tmp.file("single.gguf")), talkbox::testing::read_text(tmp.file("sharded.gguf")));
}

TEST(ConvertLayouts, HubCacheSymlinksAreFollowed) {
    // snapshots/<rev>/<file> -> ../../blobs/<name>, as the Hugging Face cache lays them out.
    const std::string src = talkbox::testing::qwen_fixture("tiny-0.6B-CustomVoice");
    TempDir tmp;
    const std::string blobs = tmp.file("blobs"), snap = tmp.file("snapshots/0123abcd");
    fs::create_directories(blobs);
    fs::create_directories(snap + "/speech_tokenizer");
    size_t n = 0;
    for (const auto& e : fs::recursive_directory_iterator(src)) {
        if (!e.is_regular_file()) continue;
        const std::string rel = fs::relative(e.path(), src).string();
        const std::string blob = blobs + "/blob" + std::to_string(n++);
        fs::copy_file(e.path(), blob);
        const int depth = static_cast<int>(std::count(rel.begin(), rel.end(), '/'));
        std::string target = "../../";
        for (int i = 0; i < depth; ++i) target += "../";
        fs::create_symlink(target + "blobs/" + fs::path(blob).filename().string(), snap + "/" + rel);
    }
    const auto s = convert_snapshot({snap, tmp.file("m.gguf"), WeightType::F16, nullptr});
    EXPECT_EQ(s.variant, "custom_voice");
    EXPECT_EQ(s.size, "0.6b");
}
