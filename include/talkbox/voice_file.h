// Making, saving and loading cloned voices (`talkbox voice create|info`). A voice is made once
// from reference audio with a Base model and reused by every later synthesis with a model of the
// same size; the file format is docs/voice-format.md.
#pragma once

#include <atomic>
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "talkbox/voice.h"

namespace talkbox {

// When create_voice should give up: `cancel` (set by another thread) and `deadline` are checked
// between the stages (reading the clip, loading the model, the speaker embedding, the codec
// encoder) and between the codec encoder's windows.
struct CloneStop {
    const std::atomic<bool>* cancel = nullptr;
    std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::time_point::max();
    // Throws Error (Cancelled) saying which of the two fired and what was `next`.
    void check(const std::string& next) const;
};

// Reads the reference clip (any libsndfile format; mixed to mono, resampled to 24 kHz as the
// official code does). Chatterbox model: computes prepare_conditionals (ref_text must be nullopt).
// Qwen3-TTS Base model: computes its speaker embedding and, for in-context cloning, its codec
// frames. ref_text: the clip's exact transcript (in-context cloning); nullopt: x-vector only.
// threads <= 0: one per core. Non-fatal remarks on the clip (very short, samples beyond [-1, 1])
// are appended to `warnings` when given. model_path is a file (resolve_model() maps hub names).
// Throws Error: Unsupported for a model without a speaker encoder (CustomVoice, VoiceDesign);
// NotFound / Format for a missing or unreadable file; InvalidArgument for a blank transcript or a
// clip that is empty, silent, too short or too long (voice/reference_audio.h has the limits).
// `stop` ends the work early (a client hang-up, a request timeout) with Error (Cancelled).
Voice create_voice(const std::string& model_path, const std::string& ref_audio_path,
                   const std::optional<std::string>& ref_text, int threads = 0,
                   std::vector<std::string>* warnings = nullptr, const CloneStop& stop = {});


// Writes the voice atomically. replace=false creates the file only if no file of that name exists
// (atomically, also against other processes) and throws Error (Exists) otherwise. Throws Error
// (InvalidArgument) for an inconsistent voice, (Io) when the file cannot be written.
void save_voice(const Voice& voice, const std::string& path, bool replace = true);

// Throws Error naming the file and the fault: NotFound (no such file; a missing key or tensor),
// Format (not a voice file, a mistyped key or tensor, a bad shape or value), Unsupported (a newer
// format version or another model family).
Voice load_voice(const std::string& path);

// How the voice conditions a model: "in_context", "x_vector" (Qwen3-TTS), "audio_prompt" (Chatterbox).
const char* voice_mode(const Voice& voice);
// For people: one line (what `voice create` reports) and labelled lines (`voice info`).
std::string voice_summary(const Voice& voice);
std::vector<std::pair<std::string, std::string>> voice_details(const Voice& voice);

}  // namespace talkbox
