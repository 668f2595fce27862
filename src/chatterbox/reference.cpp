#include "chatterbox/reference.h"

#include "voice/mel.h"

namespace talkbox::chatterbox {

std::vector<float> prompt_mel(const std::vector<float>& wav24, int64_t* frames) {
    voice::MelConfig config;
    config.sample_rate = 24000;
    config.n_fft = 1920;
    config.hop = 480;
    config.n_mels = 80;
    config.fmin = 0;
    config.fmax = 8000;
    static const voice::MelFrontEnd front_end(config);
    const voice::MelSpectrogram mel = front_end.compute(wav24);
    std::vector<float> out(mel.data.size());
    for (int64_t m = 0; m < mel.n_mels; ++m) {
        for (int64_t t = 0; t < mel.frames; ++t) out[size_t(t * mel.n_mels + m)] = mel.data[size_t(m * mel.frames + t)];
    }
    if (frames) *frames = mel.frames;
    return out;
}

}  // namespace talkbox::chatterbox
