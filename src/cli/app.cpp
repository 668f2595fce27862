#include <csignal>
#include <cstdio>
#include <unistd.h>

#include "cli/commands.h"
#include "talkbox/error.h"

// The talkbox command line: every command's registration and the errors' exit codes. main.cpp
// runs it; a test binary that registers a family of its own first runs it too.
namespace talkbox::cli {

bool stderr_is_tty() { return isatty(fileno(stderr)) != 0; }

void report_audio_written(const std::string& path, const std::string& what, size_t samples, int sample_rate, const char* verb,
                          double seconds) {
    const double audio_s = static_cast<double>(samples) / sample_rate;
    std::fprintf(stderr, "wrote %s: %s, %.2f s at %d Hz, %s in %.2f s (%.2fx real time)\n", path.c_str(), what.c_str(), audio_s,
                 sample_rate, verb, seconds, seconds > 0 ? audio_s / seconds : 0.0);
}

int run(int argc, char** argv) {
    CLI::App app{"talkbox — fast local neural text-to-speech: Qwen3-TTS (Base voice cloning, CustomVoice, VoiceDesign) and Chatterbox (multilingual, English, Turbo, Nano)", "talkbox"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "talkbox 0.1.0");
    app.footer("Run 'talkbox <command> --help' for the options of a command.");
    register_bench(app);
    register_convert(app);
    register_decode(app);
    register_default(app);
    register_devices(app);
    register_encode(app);
    register_info(app);
    register_pull(app);
    register_list(app);
    register_serve(app);
    register_speak(app);
    register_voice(app);
    register_tokenize(app);
    register_vc(app);
    register_watermark(app);
    // A reader that goes away is a write error to report (talkbox speak -o - | head), not a silent death.
    std::signal(SIGPIPE, SIG_IGN);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ValidationError& e) {
        // A value out of its range (talkbox::cli::number_check): refused like any other bad argument.
        std::fprintf(stderr, "talkbox: error: %s\n", e.what());
        return 1;
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    } catch (const Error& e) {
        std::fprintf(stderr, "talkbox: error: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "talkbox: internal error: %s\n", e.what());
        return 2;
    }
    return 0;
}

}  // namespace talkbox::cli
