/* Speaks a text file through the C API, streaming the samples to a file as they come: the C API
 * leg of the long-text check (tests/cli/chapter_test.cpp).
 *
 *   capi_speak_file CUSTOMVOICE.gguf TEXT_FILE INPUT_FORMAT SEED MIN_FRAMES MAX_FRAMES OUT.f32 SEGMENTS.txt
 *
 * OUT.f32 gets the float samples; SEGMENTS.txt a line "start end" (samples) per segment. Prints the
 * process's peak memory ("peak_rss_kb N") and exits 0, or prints the error and exits 1. C99. */
#define _XOPEN_SOURCE 700
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "talkbox/talkbox.h"

typedef struct {
    FILE* audio;
    FILE* segments;
    int failed;
} Outputs;

static int write_audio(const float* samples, size_t count, void* user) {
    Outputs* o = (Outputs*)user;
    if (fwrite(samples, sizeof(float), count, o->audio) != count) o->failed = 1;
    return o->failed;
}

static void write_segment(const talkbox_segment* segment, void* user) {
    Outputs* o = (Outputs*)user;
    if (fprintf(o->segments, "%zu %zu\n", segment->start, segment->end) < 0) o->failed = 1;
}

static char* read_file(const char* path) {
    FILE* f = fopen(path, "rb");
    char* text = NULL;
    long size;
    if (!f || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) goto done;
    text = (char*)malloc((size_t)size + 1);
    if (text && fread(text, 1, (size_t)size, f) != (size_t)size) {
        free(text);
        text = NULL;
    }
    if (text) text[size] = '\0';
done:
    if (f) fclose(f);
    return text;
}

int main(int argc, char** argv) {
    talkbox_model* model = NULL;
    talkbox_session* session = NULL;
    talkbox_request* request = NULL;
    Outputs out = {NULL, NULL, 0};
    char* text;
    talkbox_status status;
    struct rusage usage;
    if (argc != 9) {
        fprintf(stderr, "usage: %s MODEL.gguf TEXT_FILE INPUT_FORMAT SEED MIN_FRAMES MAX_FRAMES OUT.f32 SEGMENTS.txt\n", argv[0]);
        return 2;
    }
    text = read_file(argv[2]);
    out.audio = fopen(argv[7], "wb");
    out.segments = fopen(argv[8], "w");
    if (!text || !out.audio || !out.segments) {
        fprintf(stderr, "cannot read %s or create %s / %s\n", argv[2], argv[7], argv[8]);
        return 1;
    }
    status = talkbox_model_load(argv[1], NULL, &model);
    if (status == TALKBOX_OK) status = talkbox_session_new(model, &session);
    if (status == TALKBOX_OK) status = talkbox_request_new(&request);
    if (status == TALKBOX_OK) status = talkbox_request_set_text(request, text);
    if (status == TALKBOX_OK) status = talkbox_request_set_input_format(request, argv[3]);
    if (status == TALKBOX_OK) status = talkbox_request_set_speaker(request, "ryan"); /* outside any <voice> */
    if (status == TALKBOX_OK) status = talkbox_request_set_seed(request, strtoull(argv[4], NULL, 10));
    if (status == TALKBOX_OK) status = talkbox_request_set_number(request, "min_frames", atof(argv[5]));
    if (status == TALKBOX_OK) status = talkbox_request_set_number(request, "max_frames", atof(argv[6]));
    if (status == TALKBOX_OK) status = talkbox_session_speak_segments(session, request, write_audio, write_segment, &out, NULL);
    if (status != TALKBOX_OK) fprintf(stderr, "%s: %s\n", talkbox_status_name(status), talkbox_last_error());
    talkbox_request_free(request);
    talkbox_session_free(session);
    talkbox_model_free(model);
    free(text);
    if (fclose(out.audio) != 0 || fclose(out.segments) != 0) out.failed = 1;
    if (out.failed) fprintf(stderr, "cannot write %s or %s\n", argv[7], argv[8]);
    getrusage(RUSAGE_SELF, &usage);
    printf("peak_rss_kb %ld\n", usage.ru_maxrss);
    return status == TALKBOX_OK && !out.failed ? 0 : 1;
}
