// The talkbox command line with the test-only sine family registered: the family seam's CLI, HTTP
// and Wyoming front ends, unchanged.
#include "checkpoints/converters.h"
#include "cli/commands.h"
#include "family/sine/sine_family.h"

int main(int argc, char** argv) {
    talkbox::register_family(talkbox::sine::family(), talkbox::sine::converter());
    return talkbox::cli::run(argc, argv);
}
