// Frames, the unit that the generator produces and the speech decoder consumes: Qwen3-TTS, one
// code per codebook (codebook 0 = semantic) at 12.5 Hz; Chatterbox, one speech token at 25 Hz.
#pragma once

#include <cstdint>
#include <vector>

namespace talkbox::codec {

using Frame = std::vector<int32_t>;
using Frames = std::vector<Frame>;

}  // namespace talkbox::codec
