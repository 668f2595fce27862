// AAC-LC in an ADTS stream (.aac), encoded by libavcodec's native "aac" encoder (used by
// audio::encode_audio for SampleFormat::Aac).
#pragma once

#include <cstdint>
#include <vector>

namespace talkbox::audio {

// The bytes of a complete ADTS stream of mono `samples`: one 7-byte ADTS header (no CRC) before
// each raw AAC frame of 1024 samples. Throws Error (Unsupported) for a sample rate ADTS cannot
// signal, (Internal) when libavcodec fails.
std::vector<uint8_t> encode_aac_adts(const std::vector<float>& samples, int sample_rate);

}  // namespace talkbox::audio
