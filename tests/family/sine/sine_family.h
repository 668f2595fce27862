// A test-only model family that proves the family seam (issue 29): a "model" that speaks a sine
// tone, one frame per code point of the text, with one knob of its own, `pitch`. It lives only
// here: its runtime part (sine_family.cpp), its conversion (sine_converter.cpp), and one
// registration line in each binary that uses it (talkbox_sine_main.cpp, sine_family_test.cpp).
#pragma once

#include "convert/family_converter.h"
#include "family/family.h"

namespace talkbox::sine {

constexpr const char* kArchitecture = "sine";
constexpr int kSampleRate = 24000;      // unless sine.json sets "sample_rate" (a model at another rate)
constexpr int kSamplesPerFrame = 1920;  // 12.5 frames per second, as Qwen3-TTS (at any rate)
constexpr double kDefaultPitch = 440;

Family family();
// A folder with sine.json {"amplitude": A} converts to a GGUF holding the tensor sine.amplitude;
// {"amplitude": A, "sample_rate": R} to a model that speaks at R Hz (the key sine.sample_rate).
const FamilyConverter& converter();

}  // namespace talkbox::sine
