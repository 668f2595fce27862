// Voice conversion of a recording held in memory as the bytes of an audio file: the server's
// uploads (POST /v1/audio/voice_conversion). `talkbox vc` converts files (voice_conversion.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "talkbox/model.h"

namespace talkbox {

// Model::convert_voice of the recording in `data` (any format the file reader takes, mixed to mono,
// at most 60 s), read with the limits of reference clips; `label` names it in messages. Throws
// Error: Format (unreadable), InvalidArgument (rate, channels or length out of range, too short,
// not finite, a voice of another model), Unsupported (a model that does not convert voices),
// Cancelled (settings.cancel).
ConvertedVoice convert_recording(const Model& model, const void* data, size_t size, const std::string& label, const Voice* target,
                                 const ConversionSettings& settings);

}  // namespace talkbox
