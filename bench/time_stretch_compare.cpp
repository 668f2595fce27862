// Rubber Band and SoundTouch side by side, as used for the speech endpoint's `speed` (tempo
// change, pitch kept): each stretches a 440 Hz sine and a speech clip, fed in 1920-sample chunks
// (0.08 s, as the streaming decoder hands them out) on one thread. Prints, per library and speed,
// the output duration over the expected one, the dominant frequency of the stretched sine, and the
// cost in ms per second of input audio. Built and run by bench/time_stretch.sh.
#include <rubberband/RubberBandStretcher.h>
#include <sndfile.h>
#include <soundtouch/SoundTouch.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

namespace {

constexpr int kRate = 24000;
constexpr size_t kChunk = 1920;

using Stretch = std::vector<float> (*)(const std::vector<float>&, double);

std::vector<float> soundtouch_stretch(const std::vector<float>& in, double speed) {
    soundtouch::SoundTouch st;
    st.setSampleRate(kRate);
    st.setChannels(1);
    st.setTempo(speed);
    std::vector<float> out, buf(8192);
    const auto drain = [&] {
        for (unsigned n; (n = st.receiveSamples(buf.data(), static_cast<unsigned>(buf.size()))) > 0;) out.insert(out.end(), buf.begin(), buf.begin() + n);
    };
    for (size_t at = 0; at < in.size(); at += kChunk) {
        st.putSamples(in.data() + at, static_cast<unsigned>(std::min(kChunk, in.size() - at)));
        drain();
    }
    st.flush();
    drain();
    return out;
}

std::vector<float> rubberband_stretch(const std::vector<float>& in, double speed, bool finer) {
    using RB = RubberBand::RubberBandStretcher;
    RB rb(kRate, 1, RB::OptionProcessRealTime | (finer ? RB::OptionEngineFiner : RB::OptionEngineFaster), 1.0 / speed);
    rb.setMaxProcessSize(kChunk);
    std::vector<float> out, buf(8192);
    size_t delay = rb.getStartDelay();
    const auto drain = [&] {
        for (int n; (n = rb.available()) > 0;) {
            float* p = buf.data();
            const size_t got = rb.retrieve(&p, std::min<size_t>(static_cast<size_t>(n), buf.size()));
            const size_t skip = std::min(delay, got);
            delay -= skip;
            out.insert(out.end(), buf.begin() + static_cast<long>(skip), buf.begin() + static_cast<long>(got));
        }
    };
    std::vector<float> pad(rb.getPreferredStartPad(), 0.0f);
    const float* pp = pad.data();
    if (!pad.empty()) rb.process(&pp, pad.size(), false);
    for (size_t at = 0; at < in.size(); at += kChunk) {
        const float* p = in.data() + at;
        const size_t n = std::min(kChunk, in.size() - at);
        rb.process(&p, n, at + n >= in.size());
        drain();
    }
    drain();
    return out;
}
std::vector<float> rubberband_faster(const std::vector<float>& in, double speed) { return rubberband_stretch(in, speed, false); }
std::vector<float> rubberband_finer(const std::vector<float>& in, double speed) { return rubberband_stretch(in, speed, true); }

// The strongest frequency between 50 Hz and 2 kHz of the middle half (a 1 Hz DFT scan).
double dominant_hz(const std::vector<float>& x) {
    const size_t from = x.size() / 4, to = x.size() * 3 / 4;
    double best = 0, best_hz = 0;
    for (double hz = 50; hz <= 2000; hz += 1) {
        double re = 0, im = 0;
        const double w = 2 * M_PI * hz / kRate;
        for (size_t i = from; i < to; ++i) re += x[i] * std::cos(w * i), im += x[i] * std::sin(w * i);
        if (re * re + im * im > best) best = re * re + im * im, best_hz = hz;
    }
    return best_hz;
}

std::vector<float> read_mono(const std::string& path) {
    SF_INFO info{};
    SNDFILE* f = sf_open(path.c_str(), SFM_READ, &info);
    if (!f || info.channels != 1 || info.samplerate != kRate) {
        std::fprintf(stderr, "need a 24 kHz mono clip: %s\n", path.c_str());
        std::exit(1);
    }
    std::vector<float> x(static_cast<size_t>(info.frames));
    sf_readf_float(f, x.data(), info.frames);
    sf_close(f);
    return x;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: time_stretch_compare CLIP.wav (24 kHz mono speech)\n");
        return 2;
    }
    std::vector<float> sine(kRate * 4);
    for (size_t i = 0; i < sine.size(); ++i) sine[i] = 0.5f * static_cast<float>(std::sin(2 * M_PI * 440.0 * i / kRate));
    const std::vector<float> speech = read_mono(argv[1]);
    const struct {
        const char* name;
        Stretch fn;
    } libs[] = {{"soundtouch", soundtouch_stretch}, {"rubberband-r2-faster", rubberband_faster}, {"rubberband-r3-finer", rubberband_finer}};
    std::printf("%-22s %6s %12s %12s %10s %14s\n", "library", "speed", "sine len", "sine Hz", "speech len", "ms / s audio");
    for (const auto& lib : libs) {
        for (double speed : {0.5, 0.8, 1.25, 2.0, 4.0}) {
            const auto s = lib.fn(sine, speed);
            // Cost: the speech clip, repeated until at least 1 s of wall time is spent.
            const auto t0 = std::chrono::steady_clock::now();
            double audio_s = 0;
            std::vector<float> sp;
            do {
                sp = lib.fn(speech, speed);
                audio_s += static_cast<double>(speech.size()) / kRate;
            } while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < 1.0);
            const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
            std::printf("%-22s %6.2f %12.4f %12.0f %10.4f %14.2f\n", lib.name, speed, s.size() * speed / sine.size(), dominant_hz(s),
                        sp.size() * speed / speech.size(), ms / audio_s);
        }
    }
    return 0;
}
