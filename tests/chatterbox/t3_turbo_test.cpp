// Chatterbox Turbo and Nano (GPT-2 T3 + meanflow S3Gen; tts_turbo.py with nano=False / True) on the
// tiny random folders of tests/support/tiny_turbo against goldens made once from the same files by
// tests/data/chatterbox_turbo/make_golden.py and tests/data/chatterbox_nano/make_golden.py: the
// converter (layout, hyper-parameters, refusals), the GPT-2 BPE and punc_norm_turbo, T3Turbo's raw
// logits and greedy tokens at F32, and `talkbox speak` end to end.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "chatterbox/reference.h"
#include "chatterbox/t3.h"
#include "chatterbox/text.h"
#include "chatterbox/convert/converter.h"
#include "convert/safetensors.h"
#include "core/backend.h"
#include "core/gguf_file.h"
#include "support/test_support.h"
#include "support/tiny_turbo.h"
#include "talkbox/convert.h"
#include "talkbox/error.h"
#include "talkbox/model_info.h"
#include "text/tokenizer.h"

namespace fs = std::filesystem;

namespace talkbox::chatterbox {
namespace {

using namespace talkbox::testing;

std::string data(const std::string& name, const std::string& folder = "chatterbox_turbo") {
    return std::string(TALKBOX_SOURCE_DIR) + "/tests/data/" + folder + "/" + name;
}
nlohmann::json golden(const std::string& folder = "chatterbox_turbo") { return nlohmann::json::parse(read_text(data("golden.json", folder))); }

// inference_turbo's greedy tokens, their post-processing and the raw logits of the first 3 tokens
// of `gguf` at F32 against tests/data/<folder>/ (golden.json, logits.npy).
void expect_t3_golden(const std::string& gguf, const std::string& folder) {
    const GgufFile file(gguf);
    Backend backend(1);
    const T3 t3(file, backend);
    ASSERT_TRUE(t3.turbo());
    const auto g = golden(folder).at("t3");
    T3Options o = t3.default_options();
    EXPECT_EQ(o.top_k, 1000u);
    EXPECT_FLOAT_EQ(o.top_p, 0.95f);
    o.greedy = true;
    o.max_new_tokens = g.at("max_gen_len").get<uint32_t>();
    Capture captured;
    std::vector<int32_t> tokens = t3.generate(g.at("text_ids").get<std::vector<int32_t>>(), builtin_conditioning(file), o, &captured);
    const std::vector<int32_t> post = t3.postprocess(tokens);
    if (!tokens.empty() && tokens.back() == t3.hparams().stop_speech) tokens.pop_back();  // as inference_turbo returns them
    EXPECT_EQ(tokens, g.at("greedy_tokens").get<std::vector<int32_t>>());
    EXPECT_EQ(post, g.at("postprocessed").get<std::vector<int32_t>>());

    const NpyArray want = load_npy(data("logits.npy", folder));
    ASSERT_EQ(want.shape, (std::vector<int64_t>{3, 6563}));
    const CapturedTensor& logits = captured.at("logits_cond");
    ASSERT_EQ(logits.shape, (std::vector<int64_t>{3, 6563}));
    for (size_t s = 0; s < 3; ++s) {
        const std::vector<float> w(want.data.begin() + static_cast<std::ptrdiff_t>(s * 6563),
                                   want.data.begin() + static_cast<std::ptrdiff_t>((s + 1) * 6563));
        const std::vector<float> got(logits.data.begin() + static_cast<std::ptrdiff_t>(s * 6563),
                                     logits.data.begin() + static_cast<std::ptrdiff_t>((s + 1) * 6563));
        const float err = max_abs_diff(got, w);
        std::printf("[ %s ] step %zu: max |logit error| %.3g (max |golden| %.3g)\n", folder.c_str(), s, err, max_abs(w));
        EXPECT_LE(err, 1e-4f * max_abs(w)) << "step " << s;
    }
}

std::string convert_error(const std::string& dir, const std::string& variant = "") {
    ConvertOptions opt;
    opt.snapshot_dir = dir;
    opt.output_path = dir + "/out.gguf";
    opt.type = WeightType::F32;
    opt.variant = variant;
    try {
        convert_snapshot(opt);
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(TinyTurbo, FolderHasTheReleasedLayout) {
    const std::string dir = tiny_turbo_folder();
    for (const char* f : {"t3_turbo_v1.safetensors", "s3gen_meanflow.safetensors", "ve.safetensors", "conds.pt", "vocab.json",
                          "merges.txt", "added_tokens.json"}) {
        EXPECT_TRUE(fs::exists(dir + "/" + f)) << f;
    }
    // make_golden.py reads a copy of this folder: TALKBOX_WRITE_TINY_TURBO=<dir> writes one.
    if (const char* out = std::getenv("TALKBOX_WRITE_TINY_TURBO")) write_tiny_turbo_folder(out);
}

TEST(TinyNano, FolderHasTheReleasedLayout) {
    const std::string dir = tiny_nano_folder();
    for (const char* f : {"t3_nano_v1.safetensors", "s3gen_meanflow.safetensors", "ve.safetensors", "conds.pt", "vocab.json",
                          "merges.txt", "added_tokens.json"}) {
        EXPECT_TRUE(fs::exists(dir + "/" + f)) << f;
    }
    EXPECT_FALSE(fs::exists(dir + "/t3_turbo_v1.safetensors"));
    // tests/data/chatterbox_nano/make_golden.py reads a copy: TALKBOX_WRITE_TINY_NANO=<dir> writes one.
    if (const char* out = std::getenv("TALKBOX_WRITE_TINY_NANO")) write_tiny_turbo_folder(out, kTinyNanoT3);
}

TEST(TurboConvert, OneGgufWithTheTurboVariant) {
    const GgufFile file(converted_turbo());
    const GgufMeta& m = file.meta();
    EXPECT_EQ(m.get_string("general.architecture"), "chatterbox");
    EXPECT_EQ(m.get_string("chatterbox.variant"), "turbo");
    EXPECT_EQ(m.get_string("chatterbox.t3.backbone"), "gpt2");
    EXPECT_EQ(m.get_u32("chatterbox.t3.embedding_length"), 64u);
    EXPECT_EQ(m.get_u32("chatterbox.t3.block_count"), 2u);
    EXPECT_EQ(m.get_u32("chatterbox.t3.head_count"), 4u);
    EXPECT_EQ(m.get_u32("chatterbox.t3.feed_forward_length"), 256u);
    EXPECT_EQ(m.get_u32("chatterbox.t3.context_length"), 512u);
    EXPECT_EQ(m.get_u32("chatterbox.t3.speech_vocab_size"), 6563u);
    EXPECT_FALSE(m.get_bool("chatterbox.t3.perceiver"));
    EXPECT_TRUE(m.get_bool("chatterbox.s3gen.meanflow"));
    EXPECT_EQ(m.get_u32("chatterbox.s3gen.cfm.steps"), 2u);
    EXPECT_EQ(m.get_string("tokenizer.ggml.pre"), "gpt2");
    EXPECT_EQ(m.get_string_array("chatterbox.languages"), std::vector<std::string>{"en"});
    // Conv1D [in, out] arrives transposed: ggml [in, out] = the nn.Linear layout.
    EXPECT_EQ(file.tensor("t3.blk.0.attn_qkv.weight").shape, (std::vector<int64_t>{64, 192}));
    EXPECT_EQ(file.tensor("t3.blk.1.ffn_down.weight").shape, (std::vector<int64_t>{256, 64}));
    EXPECT_EQ(file.tensor("t3.tfmr_pos_embd.weight").type, GGML_TYPE_F32);

    const ModelInfo info = read_model_info(converted_turbo());
    EXPECT_EQ(info.variant, "turbo");
    EXPECT_EQ(info.hyperparameters.at("T3").rfind("GPT-2, 2 layers, hidden 64", 0), 0u) << info.hyperparameters.at("T3");
    EXPECT_EQ(info.hyperparameters.at("tokenizer").rfind("GPT-2 byte-level BPE", 0), 0u);
}

// Nano's T3 is the only file that differs from Turbo's: its sizes come from its shapes and the
// tiny head count, the rest of the GGUF is Turbo's.
TEST(NanoConvert, OneGgufWithTheNanoVariant) {
    const GgufFile file(converted_nano());
    const GgufMeta& m = file.meta();
    EXPECT_EQ(m.get_string("chatterbox.variant"), "nano");
    EXPECT_EQ(m.get_string("chatterbox.t3.checkpoint"), "t3_nano_v1.safetensors");
    EXPECT_EQ(m.get_string("chatterbox.t3.backbone"), "gpt2");
    EXPECT_EQ(m.get_u32("chatterbox.t3.embedding_length"), 48u);
    EXPECT_EQ(m.get_u32("chatterbox.t3.block_count"), 3u);
    EXPECT_EQ(m.get_u32("chatterbox.t3.head_count"), 3u);
    EXPECT_EQ(m.get_u32("chatterbox.t3.head_dim"), 16u);
    EXPECT_EQ(m.get_u32("chatterbox.t3.feed_forward_length"), 192u);
    EXPECT_EQ(m.get_u32("chatterbox.t3.speech_cond_prompt_length"), 375u);
    EXPECT_TRUE(m.get_bool("chatterbox.s3gen.meanflow"));
    EXPECT_EQ(m.get_string("chatterbox.tokenizer.kind"), "turbo");  // Turbo's GPT-2 BPE
    EXPECT_EQ(m.get_string("tokenizer.ggml.pre"), "gpt2");
    EXPECT_EQ(file.tensor("t3.blk.2.attn_qkv.weight").shape, (std::vector<int64_t>{48, 144}));
    EXPECT_FALSE(file.has_tensor("t3.blk.3.attn_qkv.weight"));

    const ModelInfo info = read_model_info(converted_nano());
    EXPECT_EQ(info.variant, "nano");
    EXPECT_EQ(info.hyperparameters.at("T3").rfind("GPT-2, 3 layers, hidden 48, 3 heads of 16", 0), 0u) << info.hyperparameters.at("T3");
    // tts_turbo.py's reference clip recipe, as for Turbo.
    const ReferenceRecipe recipe = ReferenceRecipe::for_model(file);
    EXPECT_EQ(recipe.t3_samples, kTurboEncCondSamples);
    EXPECT_EQ(recipe.prompt_tokens, 375);
    EXPECT_TRUE(recipe.normalize_loudness);
    // The same text front end as Turbo.
    const TextFrontEnd fe = TextFrontEnd::from_gguf(m);
    ASSERT_TRUE(fe.turbo());
    EXPECT_EQ(fe.text_tokens(fe.encode(golden().at("t3").at("text"), "en"), 255, 0),
              golden().at("t3").at("text_ids").get<std::vector<int32_t>>());
}

TEST(NanoConvert, TheVariantComesFromTheT3FileOrIsAsked) {
    TempDir tmp;
    // Both T3 files: Turbo by default (a folder of the turbo repository), Nano when asked.
    const std::string both = tmp.file("both");
    copy_tree(tiny_turbo_folder(), both);
    fs::copy_file(tiny_nano_folder() + "/t3_nano_v1.safetensors", both + "/t3_nano_v1.safetensors");
    fs::copy_file(tiny_nano_folder() + "/tiny_hparams.json", both + "/tiny_hparams.json", fs::copy_options::overwrite_existing);
    EXPECT_EQ(chatterbox_files(folder_files(both, "Chatterbox folder"), "", "").variant, "turbo");
    const ChatterboxFiles nano = chatterbox_files(folder_files(both, "Chatterbox folder"), "nano", "");
    EXPECT_EQ(nano.t3, "t3_nano_v1.safetensors");
    EXPECT_FALSE(nano.default_variant);
    EXPECT_EQ(chatterbox_files(folder_files(tiny_nano_folder(), "Chatterbox folder"), "", "").variant, "nano");
    ConvertOptions opt;
    opt.snapshot_dir = both;
    opt.output_path = tmp.file("nano.gguf");
    opt.type = WeightType::F32;
    opt.variant = "nano";
    EXPECT_EQ(convert_snapshot(opt).variant, "nano");
    EXPECT_EQ(read_model_info(opt.output_path).hyperparameters.at("T3").rfind("GPT-2, 3 layers, hidden 48", 0), 0u);

    EXPECT_EQ(convert_error(tiny_turbo_folder(), "nano"),
              "Chatterbox folder is missing the nano T3 weights: '" + tiny_turbo_folder() + "/t3_nano_v1.safetensors' does not exist");
    const std::string llama = tmp.file("llama_t3");
    copy_tree(tiny_nano_folder(), llama);
    fs::copy_file(chatterbox_fixture("tiny-multilingual/t3_cfg.safetensors"), llama + "/t3_nano_v1.safetensors",
                  fs::copy_options::overwrite_existing);
    EXPECT_EQ(convert_error(llama), llama + "/t3_nano_v1.safetensors: the nano T3 has no GPT-2 blocks (tfmr.h.0.attn.c_attn.weight)");
}

TEST(TurboConvert, BadFoldersFailCleanly) {
    TempDir tmp;
    const auto fresh = [&](const std::string& name) {
        const std::string dir = tmp.file(name);
        copy_tree(tiny_turbo_folder(), dir);
        return dir;
    };
    {
        const std::string dir = fresh("no_merges");
        fs::remove(dir + "/merges.txt");
        EXPECT_EQ(convert_error(dir), "Chatterbox folder is missing the GPT-2 tokenizer: '" + dir + "/merges.txt' does not exist");
    }
    {
        const std::string dir = fresh("no_meanflow");
        fs::remove(dir + "/s3gen_meanflow.safetensors");
        EXPECT_EQ(convert_error(dir, "turbo"),
                  "Chatterbox folder is missing the S3Gen weights: '" + dir + "/s3gen_meanflow.safetensors' does not exist");
    }
    {  // a standard (non-meanflow) S3Gen under the meanflow name
        const std::string dir = fresh("standard_s3gen");
        fs::copy_file(chatterbox_fixture("tiny-multilingual/s3gen.safetensors"), dir + "/s3gen_meanflow.safetensors",
                      fs::copy_options::overwrite_existing);
        EXPECT_EQ(convert_error(dir), dir + "/s3gen_meanflow.safetensors: not a meanflow S3Gen "
                                            "(no flow.decoder.estimator.time_embed_mixer.weight)");
    }
    {  // a Llama T3 under the Turbo name
        const std::string dir = fresh("llama_t3");
        fs::copy_file(chatterbox_fixture("tiny-multilingual/t3_cfg.safetensors"), dir + "/t3_turbo_v1.safetensors",
                      fs::copy_options::overwrite_existing);
        EXPECT_EQ(convert_error(dir), dir + "/t3_turbo_v1.safetensors: the turbo T3 has no GPT-2 blocks (tfmr.h.0.attn.c_attn.weight)");
    }
    {  // the GPT-2 T3 read as the English one
        const std::string dir = fresh("gpt2_as_english");
        fs::copy_file(dir + "/t3_turbo_v1.safetensors", dir + "/t3_cfg.safetensors");
        fs::copy_file(chatterbox_fixture("tiny-multilingual/s3gen.safetensors"), dir + "/s3gen.safetensors");
        fs::copy_file(chatterbox_fixture("tiny-multilingual/tokenizer.json"), dir + "/tokenizer.json");
        EXPECT_EQ(convert_error(dir, "english"), dir + "/t3_cfg.safetensors: holds a GPT-2 (Turbo or Nano) T3; convert it as variant turbo or nano");
    }
    {  // an unknown GPT-2 key
        const std::string dir = fresh("foreign_key");
        RawTensor extra{"tfmr.h.0.attn.masked_bias", "F32", {1}, std::vector<uint8_t>(4)};
        write_file(dir + "/t3_turbo_v1.safetensors", make_safetensors({extra}));
        EXPECT_EQ(convert_error(dir), dir + "/t3_turbo_v1.safetensors: unexpected tensor 'tfmr.h.0.attn.masked_bias' "
                                            "(not part of a Chatterbox T3 checkpoint)");
    }
    {  // c_attn of the wrong width
        const std::string dir = fresh("bad_c_attn");
        const SafetensorsFile f(dir + "/t3_turbo_v1.safetensors");
        std::vector<RawTensor> tensors;
        for (const auto& t : f.tensors()) {
            RawTensor r{t.name, "F32", t.shape, std::vector<uint8_t>(t.data, t.data + t.nbytes)};
            if (t.name == "tfmr.h.0.attn.c_attn.weight") {
                r.shape = {64, 128};
                r.bytes.resize(64 * 128 * 4);
            }
            tensors.push_back(std::move(r));
        }
        write_file(dir + "/t3_turbo_v1.safetensors", make_safetensors(tensors));
        EXPECT_EQ(convert_error(dir), "inconsistent Chatterbox checkpoint: tfmr.h.0.attn.c_attn.weight is not [hidden, 3·hidden]");
    }
    {
        const std::string dir = fresh("bad_added_tokens");
        write_text(dir + "/added_tokens.json", "{\"[laugh]\": \"x\"}");
        EXPECT_EQ(convert_error(dir), dir + "/added_tokens.json: '[laugh]': token id \"x\" is not a valid id");
    }
}

TEST(TurboText, Gpt2BpeIdsEqualTheReferenceTokenizer) {
    const GgufFile file(converted_turbo());
    const Tokenizer tok = Tokenizer::from_gguf(file.meta());
    size_t n = 0;
    const nlohmann::json g = golden();
    for (const auto& c : g.at("bpe")) {
        const std::string text = c.at("text");
        EXPECT_EQ(tok.encode(text), c.at("ids").get<std::vector<int32_t>>()) << text;
        EXPECT_EQ(tok.decode(tok.encode(text)), text);
        ++n;
    }
    EXPECT_GE(n, 10u);
}

TEST(TurboText, PuncNormAndFrontEnd) {
    const nlohmann::json all = golden();
    for (const auto& c : all.at("punc_norm")) {
        EXPECT_EQ(punc_norm_turbo(c.at("text")), c.at("normalized").get<std::string>()) << c.at("text");
    }
    const GgufFile file(converted_turbo());
    const TextFrontEnd fe = TextFrontEnd::from_gguf(file.meta());
    ASSERT_TRUE(fe.turbo());
    const auto g = all.at("t3");
    const TextTokens t = fe.encode(g.at("text"), "en");
    EXPECT_EQ(fe.text_tokens(t, 255, 0), g.at("text_ids").get<std::vector<int32_t>>());  // no start/stop tokens
    try {
        fe.encode("Bonjour", "fr");
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), "Chatterbox Turbo speaks English only (language 'fr')");
    }
}

TEST(TurboT3, LogitsAndGreedyTokensMatchTheReferencePort) { expect_t3_golden(converted_turbo(), "chatterbox_turbo"); }

// Nano's golden was checked bit for bit against the official T3 (tests/data/chatterbox_nano/README.md).
TEST(NanoT3, LogitsAndGreedyTokensMatchTheOfficialT3) { expect_t3_golden(converted_nano(), "chatterbox_nano"); }

TEST(TurboT3, BadOptionsFailCleanly) {
    const GgufFile file(converted_turbo());
    Backend backend(1);
    const T3 t3(file, backend);
    const T3Conditioning cond = builtin_conditioning(file);
    T3Options o = t3.default_options();
    o.max_new_tokens = 1000;  // 512 positions in the tiny model
    try {
        t3.generate({40, 41}, cond, o);
        ADD_FAILURE() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("max_new_tokens must be in 1.."), std::string::npos) << e.what();
    }
    o.max_new_tokens = 4;
    EXPECT_THROW(t3.generate({100000}, cond, o), Error);
    EXPECT_THROW(t3.generate({}, cond, o), Error);
    o.top_p = 0.0f;
    EXPECT_THROW(t3.generate({40}, cond, o), Error);
}

// Turbo has no CFG: one row per sentence. Sentences of different lengths, seeded top-k/top-p
// draws and one short limit: each one's tokens equal generate()'s alone in batches of 2 and 3, at
// F32 and with Q8_0 weights.
TEST(TurboT3, EachSentenceGetsItsTokensAloneInBatches) {
    for (const char* type : {"f32", "q8_0"}) {
        SCOPED_TRACE(type);
        const GgufFile file(converted_turbo(type));
        Backend backend(2);
        const T3 t3(file, backend);
        const T3Conditioning cond = builtin_conditioning(file);
        const std::vector<std::vector<int32_t>> texts = {{40, 41, 42}, {50, 51, 52, 53, 54, 55, 56, 57}, {60, 61, 62, 63, 64}};
        std::vector<T3Options> options(texts.size(), t3.default_options());
        for (size_t i = 0; i < options.size(); ++i) {
            options[i].seed = 30 + i;
            options[i].max_new_tokens = 30;
        }
        options[0].max_new_tokens = 3;  // 4 tokens, then it leaves
        std::vector<std::vector<int32_t>> alone;
        for (size_t i = 0; i < texts.size(); ++i) alone.push_back(t3.generate(texts[i], cond, options[i]));
        std::printf("[ turbo    ] %s: %zu, %zu and %zu tokens alone\n", type, alone[0].size(), alone[1].size(), alone[2].size());
        ASSERT_EQ(alone[0].size(), 4u);
        ASSERT_GT(alone[1].size(), 4u);
        ASSERT_GT(alone[2].size(), 4u);
        for (size_t parallel : {2, 3}) {
            std::vector<T3Job> jobs;
            for (size_t i = 0; i < texts.size(); ++i) jobs.push_back({&texts[i], &cond, options[i], nullptr, nullptr});
            std::vector<std::vector<int32_t>> got(texts.size());
            t3.generate_batch(jobs, parallel, [&](size_t j, std::vector<int32_t>&& p) { got[j] = std::move(p); });
            EXPECT_EQ(got, alone) << "batches of " << parallel;
        }
    }
}

TEST(TurboSpeak, SpeakWritesAWav) {
    TempDir tmp;
    const auto r = run_talkbox("speak -m " + converted_turbo() + " -t 'Hello there.' --seed 3 --max-frames 6 -o " + tmp.file("out.wav"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(fs::exists(tmp.file("out.wav")));
    // (6 or 7 T3 tokens → ≤ 7 + 3 silence tokens × 960 samples) + the 44-byte header
    const auto bytes = fs::file_size(tmp.file("out.wav"));
    EXPECT_GT(bytes, 44u + 2 * 960u);
    EXPECT_LE(bytes, 44u + 2 * 960u * 10);
    const auto bad = run_talkbox("speak -m " + converted_turbo() + " -t 'Hallo.' --language de -o " + tmp.file("de.wav"));
    EXPECT_NE(bad.exit_code, 0);
    EXPECT_NE(bad.err.find("speaks only 'en'"), std::string::npos) << bad.err;
}

// Nano speaks as Turbo does: tts_turbo.py's sampling settings, no guidance, English only.
TEST(NanoSpeak, SpeakWritesAWavAndInfoNamesNano) {
    TempDir tmp;
    const auto r = run_talkbox("speak -m " + converted_nano() + " -t 'Hello there.' --seed 3 --max-frames 6 -o " + tmp.file("out.wav"));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto bytes = fs::file_size(tmp.file("out.wav"));
    EXPECT_GT(bytes, 44u + 2 * 960u);
    EXPECT_LE(bytes, 44u + 2 * 960u * 10);
    const auto guided = run_talkbox("speak -m " + converted_nano() + " -t 'Hello.' --cfg-weight 0.3 -o " + tmp.file("cfg.wav"));
    EXPECT_NE(guided.exit_code, 0);
    EXPECT_NE(guided.err.find("Chatterbox Nano"), std::string::npos) << guided.err;
    const auto info = run_talkbox("info " + converted_nano());
    ASSERT_EQ(info.exit_code, 0) << info.err;
    EXPECT_NE(info.out.find("variant:      nano"), std::string::npos) << info.out;
}

// A voice's prompt positions are prefilled once and kept across calls (T3::prompt_prefills): its
// later sentences get the tokens a fresh T3 gives them. Another voice, or another KV type, is
// prefilled on its own; past the cache's budget the least recently used voice goes.
TEST(TurboT3, VoicePromptsArePrefilledOnceAcrossCalls) {
    const GgufFile file(converted_turbo());
    Backend backend(2);
    const T3Conditioning a = builtin_conditioning(file);
    T3Conditioning b = a;
    b.prompt_speech_tokens.resize(b.prompt_speech_tokens.size() / 2);
    for (float& v : b.speaker_emb) v = -v;
    const std::vector<int32_t> text = {40, 41, 42, 43};
    T3Options o = T3(file, backend).default_options();
    o.seed = 7;
    o.max_new_tokens = 20;
    T3Options f16 = o;
    f16.kv_cache = lm::KvType::F16;  // (Q8_0 needs head_dim 32; the tiny model has 16)
    const auto fresh = [&](const T3Conditioning& c, const T3Options& opt) { return T3(file, backend).generate(text, c, opt); };
    const std::vector<int32_t> want_a = fresh(a, o), want_b = fresh(b, o), want_a_f16 = fresh(a, f16);
    ASSERT_NE(want_a, want_b);

    const T3 t3(file, backend);
    EXPECT_EQ(t3.generate(text, a, o), want_a);
    EXPECT_EQ(t3.prompt_prefills(), 1u);
    EXPECT_EQ(t3.generate(text, b, o), want_b);
    EXPECT_EQ(t3.prompt_prefills(), 2u);
    const T3Conditioning a_again = a;  // another object with the same voice
    EXPECT_EQ(t3.generate(text, a_again, o), want_a);
    EXPECT_EQ(t3.generate(std::vector<int32_t>{50, 51}, a, o).empty(), false);
    EXPECT_EQ(t3.prompt_prefills(), 2u);
    EXPECT_EQ(t3.generate(text, a, f16), want_a_f16);
    EXPECT_EQ(t3.prompt_prefills(), 3u);

    const T3 small(file, backend, kDefaultMaxBatch, 1);  // room for the newest voice only
    EXPECT_EQ(small.generate(text, a, o), want_a);
    EXPECT_EQ(small.generate(text, a, o), want_a);
    EXPECT_EQ(small.prompt_prefills(), 1u);
    EXPECT_EQ(small.generate(text, b, o), want_b);
    EXPECT_EQ(small.generate(text, a, o), want_a);
    EXPECT_EQ(small.prompt_prefills(), 3u);
}

}  // namespace
}  // namespace talkbox::chatterbox
