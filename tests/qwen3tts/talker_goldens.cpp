#include "qwen3tts/talker_goldens.h"

#include <map>
#include <memory>

#include "support/test_support.h"
#include "talkbox/convert.h"

namespace talkbox::testing {

std::string TalkerCase::dir() const { return qwen_fixture("goldens/talker/" + variant + "/" + name); }

nlohmann::json TalkerCase::json() const { return nlohmann::json::parse(read_text(file("case.json"))); }

qwen3tts::PromptRequest TalkerCase::request() const {
    const auto j = json();
    qwen3tts::PromptRequest r;
    const std::string mode = j.at("mode");
    r.mode = mode == "base" ? qwen3tts::Mode::VoiceClone
             : mode == "voice_design" ? qwen3tts::Mode::VoiceDesign
                                      : qwen3tts::Mode::CustomVoice;
    const auto& ids = j.at("token_ids");
    r.input_ids = ids.at("input_ids").get<std::vector<int32_t>>();
    if (ids.contains("instruct_ids")) r.instruct_ids = ids.at("instruct_ids").get<std::vector<int32_t>>();
    if (ids.contains("ref_ids")) r.ref_ids = ids.at("ref_ids").get<std::vector<int32_t>>();
    if (!j.at("language").is_null()) r.language = j.at("language");
    if (!j.at("speaker").is_null()) r.speaker = j.at("speaker");
    if (j.contains("ref_codes") && !j.at("ref_codes").is_null()) {
        for (const auto& frame : j.at("ref_codes")) {
            for (int32_t c : frame) r.ref_codes.push_back(c);
        }
    }
    if (mode == "base") r.speaker_embedding = load_npy(file("spk_embedding.npy")).data;
    r.text_mode = j.at("non_streaming_mode").get<bool>() ? qwen3tts::TextMode::NonStreaming : qwen3tts::TextMode::Streaming;
    return r;
}

std::vector<std::vector<int32_t>> TalkerCase::frames() const {
    return json().at("frames").get<std::vector<std::vector<int32_t>>>();
}

const std::vector<TalkerCase>& talker_cases() {
    static const std::vector<TalkerCase> cases = {
        {"tiny-0.6B-Base", "base_xvec_english_stream"},
        {"tiny-0.6B-Base", "base_icl_stream_long_text"},
        {"tiny-0.6B-CustomVoice", "cv_ryan_english_stream_instruct_ignored"},
        {"tiny-0.6B-CustomVoice", "cv_vivian_auto_nonstream"},
        {"tiny-0.6B-CustomVoice", "cv_eric_dialect_chinese"},
        {"tiny-1.7B-Base", "base_xvec_chinese_nonstream"},
        {"tiny-1.7B-Base", "base_icl_nonstream"},
        {"tiny-1.7B-Base", "base_icl_stream_short_text"},
        {"tiny-1.7B-CustomVoice", "cv_aiden_english_instruct_nonstream"},
        {"tiny-1.7B-CustomVoice", "cv_dylan_dialect_auto_stream"},
        {"tiny-1.7B-CustomVoice", "cv_ono_anna_japanese_emoji_stream"},
        {"tiny-1.7B-VoiceDesign", "vd_english_nonstream"},
        {"tiny-1.7B-VoiceDesign", "vd_chinese_stream"},
    };
    return cases;
}

std::string case_test_name(const TalkerCase& c) {
    std::string s = c.variant + "_" + c.name;
    for (char& ch : s) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
    }
    return s;
}

const qwen3tts::Model& tiny_model(const std::string& variant) {
    static TempDir dir;
    static std::map<std::string, std::unique_ptr<qwen3tts::Model>> models;
    auto& m = models[variant];
    if (!m) {
        const std::string path = dir.file(variant + ".gguf");
        convert_snapshot(ConvertOptions{qwen_fixture(variant), path, WeightType::F32});
        m = std::make_unique<qwen3tts::Model>(path, qwen3tts::ModelOptions{1});
    }
    return *m;
}

Closeness compare_to_golden(const std::vector<float>& actual, const std::vector<float>& golden, float rel) {
    return {max_abs_diff(actual, golden), rel * max_abs(golden)};
}

}  // namespace talkbox::testing
