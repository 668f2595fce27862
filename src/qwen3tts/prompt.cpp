#include "qwen3tts/prompt.h"

#include <algorithm>
#include <cctype>

#include "qwen3tts/embeddings.h"
#include "core/strings.h"
#include "talkbox/error.h"

namespace talkbox::qwen3tts {

const char* mode_name(Mode m) {
    switch (m) {
        case Mode::CustomVoice: return "custom_voice";
        case Mode::VoiceDesign: return "voice_design";
        case Mode::VoiceClone: return "voice_clone";
    }
    return "?";
}

namespace {

// Fixed offsets of the official slicing: input_ids = role(3) + text + "<|im_end|>\n<|im_start|>assistant\n"(5),
// ref_ids = role(3) + ref text + "<|im_end|>\n"(2).
constexpr size_t kRole = 3, kInputTail = 5, kRefTail = 2;

Mode supported_mode(Variant v) {
    switch (v) {
        case Variant::Base: return Mode::VoiceClone;
        case Variant::CustomVoice: return Mode::CustomVoice;
        case Variant::VoiceDesign: return Mode::VoiceDesign;
    }
    return Mode::CustomVoice;
}

Error invalid(const std::string& message) { return Error(ErrorKind::InvalidArgument, message); }

bool is_dialect(const std::string& name) { return name.find("dialect") != std::string::npos; }

// The codec language id, or -1 for auto. `dialect` (a CustomVoice speaker's) overrides Chinese/auto.
int32_t resolve_language(const Hparams& h, const std::string& language, const std::string& dialect) {
    const std::string lang = ascii_lower(language);
    int32_t id = -1;
    if (lang != "auto") {
        for (size_t i = 0; i < h.language_names.size() && id < 0; ++i) {
            if (!is_dialect(h.language_names[i]) && ascii_lower(h.language_names[i]) == lang) id = h.language_ids[i];
        }
        if (id < 0) {
            std::vector<std::string> names = {"auto"};
            for (const auto& n : h.language_names) {
                if (!is_dialect(n)) names.push_back(n);
            }
            throw invalid("unsupported language '" + language + "' (supported: " + join_names(names) + ")");
        }
    }
    if (!dialect.empty() && (lang == "chinese" || lang == "auto")) {
        const auto it = std::find(h.language_names.begin(), h.language_names.end(), dialect);
        if (it == h.language_names.end()) {
            throw Error(ErrorKind::Format, "the model names dialect '" + dialect + "' for a speaker but has no language id for it");
        }
        id = h.language_ids[it - h.language_names.begin()];
    }
    return id;
}

void validate(const Model& model, const PromptRequest& r) {
    const Hparams& h = model.hparams();
    const Mode supported = supported_mode(h.variant);
    if (r.mode != supported) {
        throw invalid(std::string("this ") + variant_display_name(h.variant) + " model supports " + mode_name(supported) +
                      " only, not " + mode_name(r.mode));
    }
    if (r.input_ids.size() < kRole + kInputTail) {
        throw invalid("input_ids must hold the assistant chat template (at least " + std::to_string(kRole + kInputTail) +
                      " ids), got " + std::to_string(r.input_ids.size()));
    }
    const bool clone = r.mode == Mode::VoiceClone;
    if (!clone && !r.speaker_embedding.empty()) throw invalid("a speaker embedding is only used by voice_clone (Base models)");
    if (!clone && (!r.ref_codes.empty() || !r.ref_ids.empty())) {
        throw invalid("reference codes/text are only used by voice_clone (Base models)");
    }
    if (r.mode != Mode::CustomVoice && !r.speaker.empty()) {
        throw invalid("speaker presets need a CustomVoice model; this mode is " + std::string(mode_name(r.mode)));
    }
    if (clone && !r.instruct_ids.empty()) throw invalid("instructions are not supported by voice_clone (Base models)");
    if (clone) {
        if (r.speaker_embedding.size() != h.talker.hidden) {
            throw invalid("voice_clone needs a speaker embedding of " + std::to_string(h.talker.hidden) + " values, got " +
                          std::to_string(r.speaker_embedding.size()));
        }
        if (r.ref_codes.empty() != r.ref_ids.empty()) {
            throw invalid("in-context cloning needs both reference codes and reference text ids (or neither for x-vector only)");
        }
        if (!r.ref_ids.empty() && r.ref_ids.size() < kRole + kRefTail) {
            throw invalid("ref_ids must hold the reference chat template (at least " + std::to_string(kRole + kRefTail) +
                          " ids), got " + std::to_string(r.ref_ids.size()));
        }
    }
}

}  // namespace

Prompt build_prompt(const Model& model, const PromptRequest& r) {
    validate(model, r);
    const Hparams& h = model.hparams();
    const size_t H = h.talker.hidden;

    int32_t speaker_id = -1;
    std::string dialect;
    if (!r.speaker.empty()) {
        const std::string want = ascii_lower(r.speaker);
        for (size_t i = 0; i < h.speaker_names.size() && speaker_id < 0; ++i) {
            if (ascii_lower(h.speaker_names[i]) == want) {
                speaker_id = h.speaker_ids[i];
                dialect = h.speaker_dialects[i];
            }
        }
        if (speaker_id < 0) throw invalid("unknown speaker '" + r.speaker + "' (supported: " + join_names(h.speaker_names) + ")");
    }
    const int32_t language_id = resolve_language(h, r.language, dialect);
    // The official wrapper drops instructions for the 0.6B CustomVoice model.
    const bool instruct = !r.instruct_ids.empty() && !(r.mode == Mode::CustomVoice && h.size == "0.6b");
    const bool icl = !r.ref_codes.empty();
    const bool streaming = r.text_mode == TextMode::Default ? r.mode == Mode::VoiceClone : r.text_mode == TextMode::Streaming;

    // Every text row needed, projected in one pass: instruct, input, ref, then pad/bos/eos.
    const std::vector<int32_t>& in = r.input_ids;
    std::vector<int32_t> text_ids;
    if (instruct) text_ids = r.instruct_ids;
    const size_t in_at = text_ids.size();
    text_ids.insert(text_ids.end(), in.begin(), in.end());
    const size_t ref_at = text_ids.size();
    text_ids.insert(text_ids.end(), r.ref_ids.begin(), r.ref_ids.end());
    const size_t special_at = text_ids.size();
    for (uint32_t id : {h.tts_pad_id, h.tts_bos_id, h.tts_eos_id}) text_ids.push_back(static_cast<int32_t>(id));
    const std::vector<float> text = text_embeddings(model, text_ids);
    auto P = [&](size_t row) { return text.data() + row * H; };
    const float *t_pad = P(special_at), *t_bos = P(special_at + 1), *t_eos = P(special_at + 2);

    // Codec prefix C: think/nothink markers (+ language), optional speaker, then pad, bos.
    std::vector<int32_t> codec_ids;
    if (language_id < 0) {
        codec_ids = {int32_t(h.codec_nothink_id), int32_t(h.codec_think_bos_id), int32_t(h.codec_think_eos_id)};
    } else {
        codec_ids = {int32_t(h.codec_think_id), int32_t(h.codec_think_bos_id), language_id, int32_t(h.codec_think_eos_id)};
    }
    const size_t n_prefix = codec_ids.size();
    codec_ids.push_back(int32_t(h.codec_pad_id));
    codec_ids.push_back(int32_t(h.codec_bos_id));
    if (speaker_id >= 0) codec_ids.push_back(speaker_id);
    const std::vector<float> codec = codec_embeddings(model, codec_ids);
    const float *c_pad = codec.data() + n_prefix * H, *c_bos = c_pad + H;
    std::vector<const float*> C;
    for (size_t i = 0; i < n_prefix; ++i) C.push_back(codec.data() + i * H);
    if (speaker_id >= 0) C.push_back(codec.data() + (n_prefix + 2) * H);
    if (r.mode == Mode::VoiceClone) C.push_back(r.speaker_embedding.data());
    C.push_back(c_pad);
    C.push_back(c_bos);
    const size_t n = C.size();

    Prompt out;
    out.hidden = H;
    auto put = [H](std::vector<float>& dst, const float* a, const float* b) {
        for (size_t i = 0; i < H; ++i) dst.push_back(b ? a[i] + b[i] : a[i]);
    };
    out.tts_pad.assign(t_pad, t_pad + H);

    if (instruct) {
        for (size_t i = 0; i < in_at; ++i) put(out.embeds, P(i), nullptr);
    }
    for (size_t i = 0; i < kRole; ++i) put(out.embeds, P(in_at + i), nullptr);
    for (size_t i = 0; i + 2 < n; ++i) put(out.embeds, t_pad, C[i]);
    put(out.embeds, t_bos, C[n - 2]);

    const size_t body_begin = in_at + kRole, body_end = in_at + in.size() - kInputTail;  // text tokens
    if (icl) {
        // X: ref text, input text, eos; Y: codec bos, then each reference frame's summed embedding.
        std::vector<const float*> X;
        for (size_t i = ref_at + kRole; i < ref_at + r.ref_ids.size() - kRefTail; ++i) X.push_back(P(i));
        for (size_t i = body_begin; i < body_end; ++i) X.push_back(P(i));
        X.push_back(t_eos);
        const std::vector<float> frames = frame_embeddings(model, r.ref_codes);
        std::vector<const float*> Y = {c_bos};
        for (size_t t = 0; t < frames.size() / H; ++t) Y.push_back(frames.data() + t * H);
        if (!streaming) {
            for (const float* x : X) put(out.embeds, x, c_pad);
            for (const float* y : Y) put(out.embeds, y, t_pad);
            put(out.trailing, t_pad, nullptr);
        } else if (X.size() > Y.size()) {
            for (size_t i = 0; i < Y.size(); ++i) put(out.embeds, X[i], Y[i]);
            for (size_t i = Y.size(); i < X.size(); ++i) put(out.trailing, X[i], nullptr);
        } else {
            for (size_t i = 0; i < Y.size(); ++i) put(out.embeds, i < X.size() ? X[i] : t_pad, Y[i]);
            put(out.trailing, t_pad, nullptr);
        }
    } else if (streaming) {
        put(out.embeds, P(body_begin), c_bos);
        for (size_t i = body_begin + 1; i < body_end; ++i) put(out.trailing, P(i), nullptr);
        put(out.trailing, t_eos, nullptr);
    } else {
        for (size_t i = body_begin; i < body_end; ++i) put(out.embeds, P(i), c_pad);
        put(out.embeds, t_eos, c_pad);
        put(out.embeds, t_pad, c_bos);
        put(out.trailing, t_pad, nullptr);
    }
    return out;
}

}  // namespace talkbox::qwen3tts
