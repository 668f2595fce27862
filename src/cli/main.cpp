#include "cli/commands.h"

int main(int argc, char** argv) { return talkbox::cli::run(argc, argv); }
