#include <csignal>
#include <cstdio>
#include <unistd.h>

#include "cli/commands.h"
#include "talkbox/error.h"

namespace talkbox::cli {
bool stderr_is_tty() { return isatty(fileno(stderr)) != 0; }
}  // namespace talkbox::cli

int main(int argc, char** argv) {
    CLI::App app{"talkbox — fast local neural text-to-speech: Qwen3-TTS (Base voice cloning, CustomVoice, VoiceDesign) and Chatterbox (multilingual, English, Turbo, Nano)", "talkbox"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "talkbox 0.1.0");
    app.footer("Run 'talkbox <command> --help' for the options of a command.");
    talkbox::cli::register_bench(app);
    talkbox::cli::register_convert(app);
    talkbox::cli::register_decode(app);
    talkbox::cli::register_default(app);
    talkbox::cli::register_devices(app);
    talkbox::cli::register_encode(app);
    talkbox::cli::register_info(app);
    talkbox::cli::register_pull(app);
    talkbox::cli::register_list(app);
    talkbox::cli::register_serve(app);
    talkbox::cli::register_speak(app);
    talkbox::cli::register_voice(app);
    talkbox::cli::register_tokenize(app);
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
    } catch (const talkbox::Error& e) {
        std::fprintf(stderr, "talkbox: error: %s\n", e.what());
        return 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "talkbox: internal error: %s\n", e.what());
        return 2;
    }
    return 0;
}
