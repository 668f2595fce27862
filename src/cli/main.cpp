#include <malloc.h>

#include "cli/commands.h"

int main(int argc, char** argv) {
#ifdef __GLIBC__
    // glibc raises its mmap threshold each time a large block is freed, after which the per-segment
    // and per-graph buffers of a long text come from the heap and fragment it: a 20-minute chapter
    // grew the peak memory by 30-60 MB. A fixed threshold (glibc's default value) keeps such
    // blocks in mmap, returned to the system when freed, so long runs stay flat.
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
    return talkbox::cli::run(argc, argv);
}
