// `talkbox convert` on the tiny Chatterbox folder: every tensor arrives bit for bit (F32) from the
// files the official loader reads (checked against the .safetensors twins of the .pt files), the
// hyper-parameters inferred from shapes match tiny_hparams.json, and bad folders fail cleanly.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "chatterbox/checkpoint_names.h"
#include "convert/safetensors.h"
#include "core/gguf_file.h"
#include "core/json_file.h"
#include "support/test_support.h"
#include "talkbox/convert.h"
#include "talkbox/error.h"

namespace fs = std::filesystem;
using namespace talkbox;
using talkbox::testing::chatterbox_fixture;
using talkbox::testing::converted_chatterbox;
using talkbox::testing::TempDir;

namespace {

std::string folder() { return chatterbox_fixture("tiny-multilingual"); }

// Compares every tensor of a safetensors file with the GGUF: same shape, same bytes (F32), same
// values (integers → I32). Returns how many were compared.
size_t expect_same_tensors(const GgufFile& gguf, const std::string& file, ChatterboxFile kind) {
    SafetensorsFile src(folder() + "/" + file);
    size_t n = 0;
    for (const auto& t : src.tensors()) {
        if (chatterbox_key_dropped(kind, t.name)) continue;
        const std::string name = chatterbox_gguf_name(kind, t.name);
        SCOPED_TRACE(file + ": " + t.name + " → " + name);
        std::vector<int64_t> shape(t.shape.rbegin(), t.shape.rend());
        if (shape.empty()) shape = {1};
        const auto& g = gguf.tensor(name, shape);
        if (t.dtype == SafetensorsDtype::I64) {
            EXPECT_EQ(g.type, GGML_TYPE_I32);
            for (int64_t i = 0; i < t.element_count(); ++i) {
                int64_t a;
                int32_t b;
                std::memcpy(&a, t.data + 8 * i, 8);
                std::memcpy(&b, g.data + 4 * i, 4);
                if (a != b) {
                    ADD_FAILURE() << "element " << i << ": " << a << " != " << b;
                    break;
                }
            }
        } else {
            EXPECT_EQ(g.type, GGML_TYPE_F32);
            EXPECT_EQ(g.nbytes, t.nbytes);
            if (g.nbytes == t.nbytes) EXPECT_EQ(std::memcmp(g.data, t.data, t.nbytes), 0);
        }
        ++n;
    }
    return n;
}

// Every tensor of `got` is in `want` with the same type and bytes.
void expect_tensors_as_in(const GgufFile& got, const GgufFile& want) {
    for (const auto& t : got.tensors()) {
        SCOPED_TRACE(t.name);
        const auto& u = want.tensor(t.name, t.shape);
        EXPECT_EQ(u.type, t.type);
        ASSERT_EQ(u.nbytes, t.nbytes);
        EXPECT_EQ(std::memcmp(u.data, t.data, t.nbytes), 0);
    }
}

std::string error_of(const ConvertOptions& opt) {
    try {
        convert_snapshot(opt);
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

}  // namespace

TEST(ChatterboxConvert, MultilingualTensorsArriveBitForBit) {
    const GgufFile gguf(converted_chatterbox("multilingual", "f32"));
    EXPECT_EQ(gguf.meta().get_string("general.architecture"), "chatterbox");
    EXPECT_EQ(gguf.meta().get_string("chatterbox.variant"), "multilingual");
    size_t n = 0;
    n += expect_same_tensors(gguf, "t3_mtl23ls_v2.safetensors", ChatterboxFile::T3);
    // s3gen.pt / ve.pt / conds.pt were converted; their .safetensors twins hold the same tensors.
    n += expect_same_tensors(gguf, "s3gen.safetensors", ChatterboxFile::S3Gen);
    n += expect_same_tensors(gguf, "ve.safetensors", ChatterboxFile::VoiceEncoder);
    n += expect_same_tensors(gguf, "conds.safetensors", ChatterboxFile::Conds);
    EXPECT_EQ(n, gguf.tensors().size());
    EXPECT_EQ(n, 38u + 1432u + 16u + 7u);
}

// A multilingual folder in the safetensors forms only (what make_random_checkpoint writes):
// s3gen/ve/conds .safetensors stand in for the .pt files and give the same GGUF tensors.
TEST(ChatterboxConvert, MultilingualFolderWithSafetensorsFormsOnly) {
    TempDir tmp;
    const std::string dir = tmp.file("cb");
    talkbox::testing::copy_tree(folder(), dir);
    for (const char* pt : {"s3gen.pt", "ve.pt", "conds.pt"}) fs::remove(dir + "/" + pt);
    ConvertOptions opt;
    opt.snapshot_dir = dir;
    opt.output_path = tmp.file("st.gguf");
    opt.type = WeightType::F32;
    convert_snapshot(opt);
    const GgufFile st(opt.output_path), pt(converted_chatterbox("multilingual", "f32"));
    EXPECT_EQ(st.meta().get_string("chatterbox.variant"), "multilingual");
    EXPECT_TRUE(st.meta().get_bool("chatterbox.builtin_voice"));
    ASSERT_EQ(st.tensors().size(), pt.tensors().size());
    expect_tensors_as_in(pt, st);
}

// ChatterboxMultilingualTTS's t3_model: v2 by default, v3 on request (or alone in the folder), or a
// named .safetensors; the GGUF records which file it holds.
TEST(ChatterboxConvert, MultilingualT3ModelChoice) {
    TempDir tmp;
    const std::string dir = tmp.file("cb");
    talkbox::testing::copy_tree(folder(), dir);
    fs::copy_file(dir + "/t3_mtl23ls_v2.safetensors", dir + "/my_finetune.safetensors");
    fs::rename(dir + "/t3_mtl23ls_v2.safetensors", dir + "/t3_mtl23ls_v3.safetensors");
    auto options = [&](const std::string& t3_model, const std::string& variant = "") {
        ConvertOptions opt;
        opt.snapshot_dir = dir;
        opt.output_path = tmp.file("out.gguf");
        opt.type = WeightType::F32;
        opt.checkpoint = t3_model;
        opt.variant = variant;
        return opt;
    };
    auto checkpoint = [&](const std::string& t3_model) {
        convert_snapshot(options(t3_model));
        const GgufFile f(tmp.file("out.gguf"));
        EXPECT_EQ(f.meta().get_string("chatterbox.variant"), "multilingual");
        EXPECT_EQ(f.tensors().size(), GgufFile(converted_chatterbox("multilingual", "f32")).tensors().size());
        return f.meta().get_string("chatterbox.t3.checkpoint");
    };
    EXPECT_EQ(checkpoint(""), "t3_mtl23ls_v3.safetensors");  // only v3 in the folder
    EXPECT_EQ(checkpoint("v3"), "t3_mtl23ls_v3.safetensors");
    EXPECT_EQ(checkpoint("t3_mtl23ls_v3"), "t3_mtl23ls_v3.safetensors");
    EXPECT_EQ(checkpoint("my_finetune.safetensors"), "my_finetune.safetensors");
    EXPECT_NE(error_of(options("v2")).find("t3_mtl23ls_v2.safetensors"), std::string::npos);  // absent
    EXPECT_NE(error_of(options("v4")).find("unknown multilingual T3 model 'v4' (choose v2, v3"), std::string::npos);
    EXPECT_NE(error_of(options("v3", "english")).find("applies to the multilingual variant only"), std::string::npos);
}

// A single-language pack (ResembleAI/Chatterbox-Multilingual-pt-br): its fine-tuned T3 under its own
// name, the v3 S3Gen without the S3 tokenizer's mel filterbank (s3gen_v3.pt predates that buffer),
// and the voice encoder, built-in voice and Cangjie table from the base repository.
TEST(ChatterboxConvert, LanguagePackFolder) {
    TempDir tmp;
    const std::string dir = tmp.file("pack");
    talkbox::testing::copy_tree(folder(), dir);
    fs::rename(dir + "/t3_mtl23ls_v2.safetensors", dir + "/t3_pt_br.safetensors");
    {
        const SafetensorsFile s3gen(folder() + "/s3gen.safetensors");
        std::vector<talkbox::testing::RawTensor> kept;
        for (const auto& t : s3gen.tensors()) {
            if (t.name == "tokenizer._mel_filters" || t.name == "tokenizer.window") continue;
            kept.push_back({t.name, safetensors_dtype_name(t.dtype), t.shape, std::vector<uint8_t>(t.data, t.data + t.nbytes)});
        }
        ASSERT_EQ(kept.size() + 2, s3gen.tensors().size());
        talkbox::testing::write_file(dir + "/s3gen_v3.safetensors", talkbox::testing::make_safetensors(kept));
    }
    for (const char* f : {"s3gen.pt", "s3gen.safetensors"}) fs::remove(dir + "/" + f);
    ConvertOptions opt;
    opt.snapshot_dir = dir;
    opt.output_path = tmp.file("pack.gguf");
    opt.type = WeightType::F32;
    convert_snapshot(opt);
    const GgufFile pack(opt.output_path), standard(converted_chatterbox("multilingual", "f32"));
    EXPECT_EQ(pack.meta().get_string("chatterbox.variant"), "multilingual");
    EXPECT_EQ(pack.meta().get_string("chatterbox.t3.checkpoint"), "t3_pt_br.safetensors");
    // Every tensor as from the standard folder, the computed filterbank bit for bit the saved one.
    ASSERT_TRUE(pack.has_tensor("s3tok.mel_filters"));
    expect_tensors_as_in(pack, standard);
    EXPECT_LE(standard.tensors().size() - pack.tensors().size(), 1u);  // at most the Hann window, never read

    // Without the base repository's files it says where they come from.
    for (const char* f : {"ve.pt", "ve.safetensors", "conds.pt", "conds.safetensors", "Cangjie5_TC.json"}) fs::remove(dir + "/" + f);
    const std::string missing = error_of(opt);
    for (const char* want : {"language pack (t3_pt_br.safetensors) without 've.pt', 'conds.pt', 'Cangjie5_TC.json'",
                             "ResembleAI/chatterbox", "talkbox pull"}) {
        EXPECT_NE(missing.find(want), std::string::npos) << want << " not in: " << missing;
    }
    // Two packs' T3s in one folder: the choice is the user's.
    fs::copy_file(dir + "/t3_pt_br.safetensors", dir + "/t3_es_es.safetensors");
    EXPECT_NE(error_of(opt).find("several T3 checkpoints (t3_es_es.safetensors, t3_pt_br.safetensors): choose one with --t3-model"),
              std::string::npos)
        << error_of(opt);
}

TEST(ChatterboxConvert, EnglishReadsTheEnglishFiles) {
    const GgufFile gguf(converted_chatterbox("english", "f32"));
    EXPECT_EQ(gguf.meta().get_string("chatterbox.variant"), "english");
    EXPECT_EQ(gguf.meta().get_string("chatterbox.tokenizer.kind"), "english");
    EXPECT_FALSE(gguf.meta().has_key("chatterbox.tokenizer.cangjie_json"));
    EXPECT_EQ(gguf.meta().get_string_array("chatterbox.languages"), std::vector<std::string>{"en"});
    size_t n = 0;
    n += expect_same_tensors(gguf, "t3_cfg.safetensors", ChatterboxFile::T3);
    n += expect_same_tensors(gguf, "s3gen.safetensors", ChatterboxFile::S3Gen);
    n += expect_same_tensors(gguf, "ve.safetensors", ChatterboxFile::VoiceEncoder);
    n += expect_same_tensors(gguf, "conds.safetensors", ChatterboxFile::Conds);
    EXPECT_EQ(n, gguf.tensors().size());
    EXPECT_EQ(gguf.meta().get_string("chatterbox.tokenizer.json"), talkbox::testing::read_text(folder() + "/tokenizer.json"));
}

TEST(ChatterboxConvert, HyperParametersMatchTinyHparams) {
    const auto tiny = read_json_file(folder() + "/tiny_hparams.json");
    for (const std::string variant : {"multilingual", "english"}) {
        SCOPED_TRACE(variant);
        const GgufFile gguf(converted_chatterbox(variant, "f32"));
        const GgufMeta& m = gguf.meta();
        const auto& t3 = tiny[variant == "multilingual" ? "t3_mtl23ls_v2" : "t3_cfg"];
        const auto& llama = t3["llama"];
        EXPECT_EQ(m.get_string("chatterbox.head_counts_source"), "tiny_hparams.json");
        EXPECT_EQ(m.get_u32("chatterbox.t3.embedding_length"), llama["hidden_size"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.t3.block_count"), llama["num_hidden_layers"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.t3.head_count"), llama["num_attention_heads"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.t3.head_count_kv"), llama["num_key_value_heads"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.t3.head_dim"), llama["head_dim"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.t3.feed_forward_length"), llama["intermediate_size"].get<uint32_t>());
        EXPECT_FLOAT_EQ(m.get_f32("chatterbox.t3.rms_norm_eps"), llama["rms_norm_eps"].get<float>());
        EXPECT_FLOAT_EQ(m.get_f32("chatterbox.t3.rope.freq_base"), llama["rope_theta"].get<float>());
        EXPECT_EQ(m.get_string("chatterbox.t3.rope.scaling.type"), llama["rope_scaling"]["rope_type"].get<std::string>());
        EXPECT_FLOAT_EQ(m.get_f32("chatterbox.t3.rope.scaling.factor"), llama["rope_scaling"]["factor"].get<float>());
        EXPECT_FLOAT_EQ(m.get_f32("chatterbox.t3.rope.scaling.low_freq_factor"), llama["rope_scaling"]["low_freq_factor"].get<float>());
        EXPECT_FLOAT_EQ(m.get_f32("chatterbox.t3.rope.scaling.high_freq_factor"), llama["rope_scaling"]["high_freq_factor"].get<float>());
        EXPECT_EQ(m.get_u32("chatterbox.t3.rope.scaling.original_context_length"),
                  llama["rope_scaling"]["original_max_position_embeddings"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.t3.text_vocab_size"), t3["text_tokens_dict_size"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.t3.speech_vocab_size"), t3["speech_tokens_dict_size"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.t3.perceiver.query_count"), t3["perceiver"]["query_tokens"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.t3.perceiver.head_count"), t3["perceiver"]["heads"].get<uint32_t>());
        EXPECT_TRUE(m.get_bool("chatterbox.t3.perceiver"));
        EXPECT_TRUE(m.get_bool("chatterbox.t3.emotion_adv"));
        const auto& mt3 = tiny["t3_mtl23ls_v2"];  // the English entry omits the shared constants
        EXPECT_EQ(m.get_u32("chatterbox.t3.start_text_token"), mt3["start_text_token"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.t3.stop_text_token"), mt3["stop_text_token"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.t3.start_speech_token"), mt3["start_speech_token"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.t3.stop_speech_token"), mt3["stop_speech_token"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.t3.max_text_tokens"), mt3["max_text_tokens"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.t3.max_speech_tokens"), mt3["max_speech_tokens"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.t3.speech_cond_prompt_length"), mt3["speech_cond_prompt_len"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.t3.speaker_embed_size"), mt3["speaker_embed_size"].get<uint32_t>());

        const auto& s3 = tiny["s3gen"];
        EXPECT_EQ(m.get_u32("chatterbox.s3gen.vocab_size"), s3["vocab_size"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.s3gen.embedding_length"), s3["input_size"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.s3gen.mel_bins"), s3["output_size"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.s3gen.speaker_embed_size"), s3["spk_embed_dim"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.s3gen.token_mel_ratio"), s3["token_mel_ratio"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.s3gen.pre_lookahead_length"), s3["pre_lookahead_len"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.s3gen.encoder.block_count"), s3["enc_num_blocks"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.s3gen.encoder.up_block_count"), s3["enc_num_up_blocks"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.s3gen.encoder.head_count"), s3["enc_attention_heads"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.s3gen.encoder.feed_forward_length"), s3["enc_linear_units"].get<uint32_t>());
        EXPECT_EQ(m.get_i32_array("chatterbox.s3gen.estimator.channels").size(), s3["est_channels"].size());
        EXPECT_EQ(m.get_u32("chatterbox.s3gen.estimator.in_channels"), s3["est_in_channels"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.s3gen.estimator.block_count"), s3["est_n_blocks"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.s3gen.estimator.mid_block_count"), s3["est_num_mid_blocks"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.s3gen.estimator.head_count"), s3["est_num_heads"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.s3gen.estimator.head_dim"), s3["est_attention_head_dim"].get<uint32_t>());
        EXPECT_FALSE(m.get_bool("chatterbox.s3gen.meanflow"));
        EXPECT_EQ(m.get_u32("chatterbox.s3gen.cfm.steps"), 10u);
        EXPECT_FLOAT_EQ(m.get_f32("chatterbox.s3gen.cfm.cfg_rate"), s3["inference_cfg_rate"].get<float>());
        EXPECT_EQ(m.get_string("chatterbox.s3gen.cfm.schedule"), s3["t_scheduler"].get<std::string>());
        EXPECT_EQ(m.get_u32("chatterbox.s3gen.hift.base_channels"), s3["hift_base_channels"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.s3gen.hift.in_channels"), s3["hift_in_channels"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.s3gen.hift.harmonic_count"), s3["hift_nb_harmonics"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.s3gen.sample_rate"), s3["hift_sampling_rate"].get<uint32_t>());
        auto ints = [](const nlohmann::json& j) {
            std::vector<int32_t> v;
            for (const auto& x : j) v.push_back(x.get<int32_t>());
            return v;
        };
        EXPECT_EQ(m.get_i32_array("chatterbox.s3gen.hift.upsample_rates"), ints(s3["hift_upsample_rates"]));
        EXPECT_EQ(m.get_i32_array("chatterbox.s3gen.hift.upsample_kernel_sizes"), ints(s3["hift_upsample_kernel_sizes"]));
        EXPECT_EQ(m.get_i32_array("chatterbox.s3gen.hift.resblock_kernel_sizes"), ints(s3["hift_resblock_kernel_sizes"]));
        EXPECT_EQ(m.get_i32_array("chatterbox.s3gen.hift.resblock_dilations"), ints(s3["hift_resblock_dilation_sizes"][0]));
        EXPECT_EQ(m.get_i32_array("chatterbox.s3gen.hift.source_resblock_kernel_sizes"),
                  ints(s3["hift_source_resblock_kernel_sizes"]));
        EXPECT_EQ(m.get_i32_array("chatterbox.s3gen.hift.source_resblock_dilations"),
                  ints(s3["hift_source_resblock_dilation_sizes"][0]));
        EXPECT_EQ(m.get_u32("chatterbox.s3gen.hift.istft_n_fft"), s3["hift_istft_n_fft"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.s3gen.hift.istft_hop_length"), s3["hift_istft_hop_len"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.s3gen.hift.f0_cond_channels"), s3["f0_cond_channels"].get<uint32_t>());
        EXPECT_FLOAT_EQ(m.get_f32("chatterbox.s3gen.hift.nsf_alpha"), s3["hift_nsf_alpha"].get<float>());
        EXPECT_FLOAT_EQ(m.get_f32("chatterbox.s3gen.hift.nsf_sigma"), s3["hift_nsf_sigma"].get<float>());
        EXPECT_FLOAT_EQ(m.get_f32("chatterbox.s3gen.hift.nsf_voiced_threshold"), s3["hift_nsf_voiced_threshold"].get<float>());
        EXPECT_FLOAT_EQ(m.get_f32("chatterbox.s3gen.hift.lrelu_slope"), s3["hift_lrelu_slope"].get<float>());
        EXPECT_FLOAT_EQ(m.get_f32("chatterbox.s3gen.hift.audio_limit"), s3["hift_audio_limit"].get<float>());

        const auto& tok = tiny["s3_tokenizer"];
        EXPECT_EQ(m.get_u32("chatterbox.s3tok.mel_bins"), tok["n_mels"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.s3tok.embedding_length"), tok["n_audio_state"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.s3tok.head_count"), tok["n_audio_head"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.s3tok.block_count"), tok["n_audio_layer"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.s3tok.codebook_size"), tok["n_codebook_size"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.campplus.embedding_length"), tiny["campplus"]["embedding_size"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.campplus.feat_dim"), tiny["campplus"]["feat_dim"].get<uint32_t>());
        const auto& ve = tiny["voice_encoder"];
        EXPECT_EQ(m.get_u32("chatterbox.ve.hidden_size"), ve["ve_hidden_size"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.ve.embedding_length"), ve["speaker_embed_size"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.ve.mel_bins"), ve["num_mels"].get<uint32_t>());
        EXPECT_EQ(m.get_u32("chatterbox.ve.layer_count"), ve["num_layers"].get<uint32_t>());
        EXPECT_TRUE(m.get_bool("chatterbox.builtin_voice"));
    }
}

TEST(ChatterboxConvert, WithoutTinyHparamsTheOfficialHeadCountsApply) {
    TempDir tmp;
    talkbox::testing::copy_tree(folder(), tmp.file("cb"));
    fs::remove(tmp.file("cb/tiny_hparams.json"));
    ConvertOptions opt;
    opt.snapshot_dir = tmp.file("cb");
    opt.output_path = tmp.file("out.gguf");
    opt.type = WeightType::F32;
    // Head counts cannot be read from shapes: without the fixture's tiny_hparams.json the official
    // counts apply (they divide the tiny widths too), and the file says where they came from.
    convert_snapshot(opt);
    const GgufFile gguf(opt.output_path);
    EXPECT_EQ(gguf.meta().get_string("chatterbox.head_counts_source"), "official");
    EXPECT_EQ(gguf.meta().get_u32("chatterbox.t3.head_count"), 16u);
    EXPECT_EQ(gguf.meta().get_u32("chatterbox.t3.perceiver.head_count"), 4u);
    EXPECT_EQ(gguf.meta().get_u32("chatterbox.s3gen.estimator.head_count"), 8u);
}

TEST(ChatterboxConvert, WeightTypePolicy) {
    const GgufFile gguf(converted_chatterbox("multilingual", "q8_0"));
    std::map<std::string, ggml_type> types;
    for (const auto& t : gguf.tensors()) types[t.name] = t.type;
    EXPECT_EQ(types.at("t3.blk.0.attn_q.weight"), GGML_TYPE_Q8_0);
    EXPECT_EQ(types.at("t3.speech_head.weight"), GGML_TYPE_Q8_0);
    EXPECT_EQ(types.at("t3.text_embd.weight"), GGML_TYPE_Q8_0);
    EXPECT_EQ(types.at("flow.est.down_blocks.0.1.0.attn1.to_q.weight"), GGML_TYPE_Q8_0);
    EXPECT_EQ(types.at("flow.input_embedding.weight"), GGML_TYPE_Q8_0);
    EXPECT_EQ(types.at("s3tok.enc.blocks.0.attn.query.weight"), GGML_TYPE_Q8_0);
    for (const char* f32 : {"t3.blk.0.attn_norm.weight", "t3.text_pos_embd.weight", "t3.speech_pos_embd.weight",
                            "t3.cond.spkr_enc.weight", "t3.cond.perc.attn_q.weight", "flow.enc.encoders.0.self_attn.pos_bias_u",
                            "hift.m_source.l_linear.weight", "hift.conv_pre.weight_v", "s3tok.mel_filters",
                            "campp.xvec.dense.linear.weight", "ve.lstm.weight_ih_l0", "ve.proj.weight",
                            "voice.t3.speaker_emb", "voice.gen.prompt_feat"}) {
        EXPECT_EQ(types.at(f32), GGML_TYPE_F32) << f32;
    }
    EXPECT_EQ(types.at("voice.gen.prompt_token"), GGML_TYPE_I32);
}

TEST(ChatterboxConvert, BadFoldersFailCleanly) {
    TempDir tmp;
    auto fresh = [&](const std::string& name) {
        talkbox::testing::copy_tree(folder(), tmp.file(name));
        return tmp.file(name);
    };
    auto options = [&](const std::string& dir) {
        ConvertOptions opt;
        opt.snapshot_dir = dir;
        opt.output_path = tmp.file("out.gguf");
        opt.type = WeightType::F32;
        return opt;
    };
    {
        const std::string dir = fresh("no_s3gen");
        fs::remove(dir + "/s3gen.pt");
        fs::remove(dir + "/s3gen.safetensors");
        EXPECT_EQ(error_of(options(dir)), "Chatterbox folder is missing the S3Gen weights: neither '" + dir +
                                              "/s3gen.pt' nor its .safetensors form exists");
    }
    {
        const std::string dir = fresh("truncated_pt");
        const std::string bytes = talkbox::testing::read_text(dir + "/ve.pt");
        talkbox::testing::write_text(dir + "/ve.pt", bytes.substr(0, bytes.size() / 2));
        EXPECT_EQ(error_of(options(dir)),
                  dir + "/ve.pt: not a valid PyTorch zip checkpoint: no end-of-central-directory record (truncated file?)");
    }
    {
        const std::string dir = fresh("no_cangjie");
        fs::remove(dir + "/Cangjie5_TC.json");
        EXPECT_EQ(error_of(options(dir)),
                  "Chatterbox folder is missing the Chinese Cangjie table: '" + dir + "/Cangjie5_TC.json' does not exist");
    }
    {
        const std::string dir = fresh("bad_tokenizer");
        talkbox::testing::write_text(dir + "/grapheme_mtl_merged_expanded_v1.json", "{\"model\": ");
        EXPECT_NE(error_of(options(dir)).find(dir + " tokenizer: malformed JSON at byte"), std::string::npos) << error_of(options(dir));
    }
    {
        const std::string dir = fresh("foreign_key");
        talkbox::testing::RawTensor extra{"tfmr.layers.0.self_attn.rotary_emb.inv_freq", "F32", {2}, std::vector<uint8_t>(8)};
        talkbox::testing::write_file(dir + "/t3_cfg.safetensors", talkbox::testing::make_safetensors({extra}));
        auto opt = options(dir);
        opt.variant = "english";
        EXPECT_EQ(error_of(opt), dir + "/t3_cfg.safetensors: unexpected tensor 'tfmr.layers.0.self_attn.rotary_emb.inv_freq' "
                                       "(not part of a Chatterbox T3 checkpoint)");
    }
    {
        auto opt = options(folder());
        opt.variant = "mini";
        EXPECT_EQ(error_of(opt), "unknown Chatterbox variant 'mini' (choose multilingual, english, turbo or nano)");
    }
    EXPECT_FALSE(fs::exists(tmp.file("out.gguf")));
    for (const auto& e : fs::directory_iterator(tmp.path())) EXPECT_TRUE(e.is_directory()) << e.path();  // no temp files
}
