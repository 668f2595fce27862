// The library in a page: load a model, ask its capabilities what voice fits, speak a text into
// a WAV file. Uses only the public headers (include/talkbox/).
//
//   speak_example MODEL.gguf "Text to speak." out.wav
#include <cstdio>
#include <exception>
#include <vector>

#include "talkbox/audio.h"
#include "talkbox/error.h"
#include "talkbox/model.h"

int main(int argc, char** argv) {
    if (argc != 4) {
        std::fprintf(stderr, "usage: %s MODEL.gguf TEXT OUT.wav\n", argv[0]);
        return 2;
    }
    try {
        const talkbox::Model model(argv[1]);  // weights in memory once; any number of sessions may share it
        const talkbox::Capabilities& caps = model.capabilities();
        talkbox::SpeechRequest request;
        request.text = argv[2];
        if (!caps.speakers.empty()) request.speaker = caps.speakers.front();   // a preset
        else if (caps.designs_voice) request.instruct = "A calm, clear voice.";  // a description
        else if (caps.needs_voice) {
            std::fprintf(stderr, "%s clones voices: make one with `talkbox voice create` first\n", caps.description().c_str());
            return 1;
        }
        talkbox::Session session(model);  // one synthesis at a time
        std::vector<float> audio;
        const talkbox::SpeechResult r =
            session.speak(request, [&](const float* pcm, size_t n) { audio.insert(audio.end(), pcm, pcm + n); });
        talkbox::audio::write_audio(argv[3], audio, caps.sample_rate, talkbox::audio::SampleFormat::Wav16);
        std::printf("%s: %zu frames, %.2f s of audio (%s), seed %llu\n", caps.description().c_str(), r.frames.size(),
                    static_cast<double>(audio.size()) / caps.sample_rate, talkbox::stop_reason_name(r.stop_reason),
                    static_cast<unsigned long long>(r.seed));
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 1;
    }
}
