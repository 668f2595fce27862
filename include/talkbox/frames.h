// Codec frames: one code per codebook (codebook 0 = semantic) at 12.5 Hz, the unit that the
// generator produces and the speech decoder consumes.
#pragma once

#include <cstdint>
#include <vector>

namespace talkbox::codec {

using Frame = std::vector<int32_t>;
using Frames = std::vector<Frame>;

}  // namespace talkbox::codec
