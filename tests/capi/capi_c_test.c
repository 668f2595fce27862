/* The C API from C: capabilities, streaming parity with talkbox::Session (the samples of the
 * expected/ files, made by capi_test.cpp with the C++ API for the requests of capi_cases.h, must
 * come back bit for bit), cancellation from the callback and from another thread, voices, files,
 * and every error path the header promises (NULLs, missing files, refused settings).
 *
 *   capi_c_test CUSTOMVOICE.gguf BASE.gguf CHATTERBOX.gguf CLIP.wav EXPECTED_DIR TMP_DIR
 *
 * Prints each failed check and exits 1 if any failed. Compiled as C99. */
#define _XOPEN_SOURCE 700 /* pthreads, mkfifo and mknod under -std=c99 */
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "capi_cases.h"
#include "talkbox/talkbox.h"

static int checks = 0, failures = 0;

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        ++checks;                                                                          \
        if (!(cond)) {                                                                     \
            ++failures;                                                                    \
            fprintf(stderr, "%s:%d: check failed: %s (last error: '%s')\n", __FILE__, __LINE__, #cond, \
                    talkbox_last_error());                                                 \
        }                                                                                  \
    } while (0)

/* A status and a message fragment. */
#define CHECK_ERROR(call, status, fragment)                                                            \
    do {                                                                                               \
        talkbox_status got_ = (call);                                                                  \
        ++checks;                                                                                      \
        if (got_ != (status) || !strstr(talkbox_last_error(), (fragment))) {                           \
            ++failures;                                                                                \
            fprintf(stderr, "%s:%d: %s gave %s '%s', expected %s with '%s'\n", __FILE__, __LINE__, #call, \
                    talkbox_status_name(got_), talkbox_last_error(), talkbox_status_name(status), (fragment)); \
        }                                                                                              \
    } while (0)

#define CHECK_OK(call) CHECK_ERROR(call, TALKBOX_OK, "")

static const char *customvoice_path, *base_path, *chatterbox_path, *clip_path, *expected_dir, *tmp_dir, *perth_path;

static char* join_path(const char* dir, const char* name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char* p = (char*)malloc(n);
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

typedef struct {
    float* data;
    size_t count, capacity;
    size_t calls;
    size_t stop_after_calls; /* 0: never stop */
} Samples;

static void samples_free(Samples* s) {
    free(s->data);
    memset(s, 0, sizeof *s);
}

static int collect(const float* pcm, size_t n, void* user) {
    Samples* s = (Samples*)user;
    if (s->count + n > s->capacity) {
        size_t cap = s->capacity ? s->capacity : 4096;
        while (cap < s->count + n) cap *= 2;
        s->data = (float*)realloc(s->data, cap * sizeof(float));
        s->capacity = cap;
    }
    memcpy(s->data + s->count, pcm, n * sizeof(float));
    s->count += n;
    ++s->calls;
    return s->stop_after_calls && s->calls >= s->stop_after_calls;
}

/* expected/<name>: raw float32 samples. */
static Samples read_expected(const char* name) {
    Samples s;
    memset(&s, 0, sizeof s);
    char* path = join_path(expected_dir, name);
    FILE* f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long bytes = ftell(f);
    fseek(f, 0, SEEK_SET);
    s.count = s.capacity = (size_t)bytes / sizeof(float);
    s.data = (float*)malloc((size_t)bytes + 1);
    if (fread(s.data, 1, (size_t)bytes, f) != (size_t)bytes) exit(1);
    fclose(f);
    free(path);
    return s;
}

/* Bit-for-bit equality, with where they first differ when not. */
static int same_samples(const Samples* got, const Samples* want, const char* what) {
    if (got->count != want->count) {
        fprintf(stderr, "%s: %zu samples, expected %zu\n", what, got->count, want->count);
        return 0;
    }
    if (got->count && memcmp(got->data, want->data, got->count * sizeof(float)) != 0) {
        for (size_t i = 0; i < got->count; ++i) {
            if (memcmp(&got->data[i], &want->data[i], sizeof(float)) != 0) {
                fprintf(stderr, "%s: sample %zu is %.9g, expected %.9g\n", what, i, got->data[i], want->data[i]);
                break;
            }
        }
        return 0;
    }
    return 1;
}

static talkbox_model* load(const char* path) {
    talkbox_model* m = NULL;
    talkbox_model_options o;
    talkbox_model_options_init(&o);
    o.threads = 2;
    if (talkbox_model_load(path, &o, &m) != TALKBOX_OK) {
        fprintf(stderr, "cannot load %s: %s\n", path, talkbox_last_error());
        exit(1);
    }
    return m;
}

/* The request of expected/customvoice.f32. */
static talkbox_request* customvoice_request(const talkbox_model* m) {
    talkbox_request* r = NULL;
    CHECK_OK(talkbox_request_new(&r));
    CHECK_OK(talkbox_request_set_text(r, CASE_TEXT));
    CHECK_OK(talkbox_request_set_speaker(r, talkbox_model_speaker(m, 0)));
    CHECK_OK(talkbox_request_set_seed(r, CASE_SEED));
    CHECK_OK(talkbox_request_set_number(r, "max_frames", CASE_MAX_FRAMES));
    CHECK_OK(talkbox_request_set_number(r, "split", 0));
    return r;
}

static void test_version_and_statuses(void) {
    CHECK(strcmp(talkbox_version(), TALKBOX_VERSION_STRING) == 0);
    CHECK(talkbox_version_number() == TALKBOX_VERSION);
    CHECK(TALKBOX_VERSION == TALKBOX_VERSION_MAJOR * 10000 + TALKBOX_VERSION_MINOR * 100 + TALKBOX_VERSION_PATCH);
    CHECK(strcmp(talkbox_status_name(TALKBOX_OK), "ok") == 0);
    CHECK(strcmp(talkbox_status_name(TALKBOX_ERROR_INVALID_ARGUMENT), "invalid_argument") == 0);
    CHECK(strcmp(talkbox_status_name(TALKBOX_CANCELLED), "cancelled") == 0);
    CHECK(strcmp(talkbox_status_name(TALKBOX_ERROR_OUT_OF_MEMORY), "out_of_memory") == 0);
    CHECK(strcmp(talkbox_status_name(12345), "unknown") == 0);
}

static void test_null_arguments(void) {
    talkbox_model* m = (talkbox_model*)1;
    CHECK_ERROR(talkbox_model_load(NULL, NULL, &m), TALKBOX_ERROR_INVALID_ARGUMENT, "talkbox_model_load: path is NULL");
    CHECK(m == NULL); /* *out is cleared on failure */
    CHECK_ERROR(talkbox_model_load(customvoice_path, NULL, NULL), TALKBOX_ERROR_INVALID_ARGUMENT, "out is NULL");
    talkbox_model_options bad;
    memset(&bad, 0, sizeof bad);
    CHECK_ERROR(talkbox_model_load(customvoice_path, &bad, &m), TALKBOX_ERROR_INVALID_ARGUMENT, "talkbox_model_options_init");
    talkbox_session* s = NULL;
    CHECK_ERROR(talkbox_session_new(NULL, &s), TALKBOX_ERROR_INVALID_ARGUMENT, "talkbox_session_new: model is NULL");
    CHECK_ERROR(talkbox_session_speak(NULL, NULL, collect, NULL, NULL), TALKBOX_ERROR_INVALID_ARGUMENT, "session is NULL");
    CHECK_ERROR(talkbox_session_speak_to_file(NULL, NULL, "x.wav", NULL, NULL), TALKBOX_ERROR_INVALID_ARGUMENT, "session is NULL");
    CHECK_ERROR(talkbox_request_new(NULL), TALKBOX_ERROR_INVALID_ARGUMENT, "out is NULL");
    CHECK_ERROR(talkbox_request_set_text(NULL, "x"), TALKBOX_ERROR_INVALID_ARGUMENT, "request is NULL");
    CHECK_ERROR(talkbox_request_set_number(NULL, "temperature", 1), TALKBOX_ERROR_INVALID_ARGUMENT, "request is NULL");
    CHECK_ERROR(talkbox_voice_load(NULL, NULL), TALKBOX_ERROR_INVALID_ARGUMENT, "is NULL");
    CHECK_ERROR(talkbox_voice_save(NULL, "x.voice"), TALKBOX_ERROR_INVALID_ARGUMENT, "voice is NULL");
    CHECK_ERROR(talkbox_voice_create(NULL, clip_path, NULL, NULL), TALKBOX_ERROR_INVALID_ARGUMENT, "is NULL");
    CHECK_ERROR(talkbox_model_check(NULL, NULL), TALKBOX_ERROR_INVALID_ARGUMENT, "model is NULL");
    CHECK_ERROR(talkbox_model_field(NULL, 0, NULL), TALKBOX_ERROR_INVALID_ARGUMENT, "model is NULL");
    CHECK_ERROR(talkbox_write_audio(NULL, NULL, 0, 24000, NULL), TALKBOX_ERROR_INVALID_ARGUMENT, "path is NULL");
    /* Getters and frees take NULL quietly. */
    CHECK(talkbox_model_sample_rate(NULL) == 0);
    CHECK(strcmp(talkbox_model_description(NULL), "") == 0);
    CHECK(strcmp(talkbox_model_family(NULL), "") == 0);
    CHECK(talkbox_model_speaker(NULL, 0) == NULL);
    CHECK(talkbox_model_speaker_count(NULL) == 0);
    CHECK(talkbox_model_flags(NULL) == 0);
    CHECK(strcmp(talkbox_voice_mode(NULL), "") == 0);
    talkbox_session_cancel(NULL);
    talkbox_model_free(NULL);
    talkbox_session_free(NULL);
    talkbox_request_free(NULL);
    talkbox_voice_free(NULL);
    talkbox_result_init(NULL);
    talkbox_model_options_init(NULL);
}

static void test_bad_files(void) {
    talkbox_model* m = NULL;
    CHECK_ERROR(talkbox_model_load("/nonexistent/model.gguf", NULL, &m), TALKBOX_ERROR_NOT_FOUND, "/nonexistent/model.gguf");
    CHECK(m == NULL);
    char* junk = join_path(tmp_dir, "junk.gguf");
    FILE* f = fopen(junk, "wb");
    fputs("GGUF but not really", f);
    fclose(f);
    CHECK_ERROR(talkbox_model_load(junk, NULL, &m), TALKBOX_ERROR_FORMAT, "is not a valid GGUF file");
    talkbox_voice* v = NULL;
    CHECK_ERROR(talkbox_voice_load("/nonexistent/x.voice", &v), TALKBOX_ERROR_NOT_FOUND, "/nonexistent/x.voice");
    CHECK_ERROR(talkbox_voice_load(junk, &v), TALKBOX_ERROR_FORMAT, "junk.gguf");
    CHECK(v == NULL);
    free(junk);
    talkbox_model_options o;
    talkbox_model_options_init(&o);
    o.kv_cache = "q2";
    CHECK_ERROR(talkbox_model_load(customvoice_path, &o, &m), TALKBOX_ERROR_INVALID_ARGUMENT, "unknown KV cache type 'q2'");
    /* The speech decoder's precision: f32 or int8, nothing else. */
    talkbox_model_options_init(&o);
    o.decoder_precision = "bf16";
    CHECK_ERROR(talkbox_model_load(customvoice_path, &o, &m), TALKBOX_ERROR_INVALID_ARGUMENT,
                "decoder precision 'bf16' is not one of f32, int8");
    /* Devices: one that is not there, a malformed name, and the old gpu flag beside device. */
    talkbox_model_options_init(&o);
    o.device = "vulkan:9";
    CHECK_ERROR(talkbox_model_load(customvoice_path, &o, &m), TALKBOX_ERROR_NOT_FOUND, "device 'vulkan:9' is not available");
    o.device = "gpu";
    CHECK_ERROR(talkbox_model_load(customvoice_path, &o, &m), TALKBOX_ERROR_INVALID_ARGUMENT, "is not one of auto, cpu");
    o.gpu = 1;
    CHECK_ERROR(talkbox_model_load(customvoice_path, &o, &m), TALKBOX_ERROR_INVALID_ARGUMENT, "not both");
}

static void test_capabilities(const talkbox_model* m) {
    CHECK(talkbox_model_sample_rate(m) == 24000);
    CHECK(talkbox_model_frames_per_second(m) == 12.5);
    CHECK(strstr(talkbox_model_description(m), "CustomVoice") != NULL);
    CHECK(strcmp(talkbox_model_family(m), "Qwen3-TTS") == 0);
    CHECK(strcmp(talkbox_model_architecture(m), "qwen3tts") == 0);
    CHECK(strcmp(talkbox_model_variant(m), "custom_voice") == 0);
    CHECK(strcmp(talkbox_model_size(m), "0.6b") == 0);
    CHECK(strcmp(talkbox_model_device(m), "cpu") == 0);
    size_t speakers = talkbox_model_speaker_count(m);
    CHECK(speakers > 0);
    for (size_t i = 0; i < speakers; ++i) CHECK(talkbox_model_speaker(m, i) && *talkbox_model_speaker(m, i));
    CHECK(talkbox_model_speaker(m, speakers) == NULL);
    CHECK(talkbox_model_language_count(m) > 0);
    CHECK(talkbox_model_language(m, talkbox_model_language_count(m)) == NULL);
    unsigned flags = talkbox_model_flags(m);
    CHECK(flags & TALKBOX_MODEL_TAKES_INSTRUCT);
    CHECK(flags & TALKBOX_MODEL_FRAME_STREAMING);
    CHECK(!(flags & TALKBOX_MODEL_CLONES));
    CHECK(!(flags & TALKBOX_MODEL_DESIGNS_VOICE));
    int saw_temperature = 0;
    for (size_t i = 0; i < talkbox_model_field_count(m); ++i) {
        talkbox_field f;
        f.struct_size = sizeof f;
        CHECK_OK(talkbox_model_field(m, i, &f));
        CHECK(f.struct_size == sizeof f && f.name && f.min <= f.max);
        if (strcmp(f.name, "temperature") == 0) saw_temperature = f.has_default && !f.integer;
        if (strcmp(f.name, "top_k") == 0) CHECK(f.integer);
    }
    CHECK(saw_temperature);
    talkbox_field f;
    f.struct_size = sizeof f;
    CHECK_ERROR(talkbox_model_field(m, talkbox_model_field_count(m), &f), TALKBOX_ERROR_INVALID_ARGUMENT, "out of range");
}

static void test_speak_parity(talkbox_session* s, const talkbox_model* m) {
    talkbox_request* r = customvoice_request(m);
    Samples want = read_expected("customvoice.f32"), got;
    memset(&got, 0, sizeof got);
    talkbox_result res;
    talkbox_result_init(&res);
    CHECK_OK(talkbox_session_speak(s, r, collect, &got, &res));
    CHECK(strcmp(talkbox_last_error(), "") == 0);
    CHECK(same_samples(&got, &want, "customvoice"));
    CHECK(res.samples == got.count);
    CHECK(res.seed == CASE_SEED);
    CHECK(res.frames > 0 && res.frames <= CASE_MAX_FRAMES);
    CHECK(res.segments == 1);
    CHECK(res.stop_reason == TALKBOX_STOP_EOS || res.stop_reason == TALKBOX_STOP_MAX_FRAMES);
    CHECK(res.total_ms > 0);
    CHECK(got.calls > 1); /* streamed in pieces, not handed over at the end */
    CHECK_OK(talkbox_model_check(m, r));

    /* A caller built against an older, shorter talkbox_result: only what fits is written. */
    struct {
        talkbox_result head;
    } old;
    memset(&old, 0xAB, sizeof old);
    old.head.struct_size = offsetof(talkbox_result, frames);
    samples_free(&got);
    CHECK_OK(talkbox_session_speak(s, r, collect, &got, &old.head));
    CHECK(old.head.samples == got.count);
    unsigned char sentinel[sizeof(size_t)];
    memset(sentinel, 0xAB, sizeof sentinel);
    CHECK(memcmp(&old.head.frames, sentinel, sizeof sentinel) == 0);
    CHECK(same_samples(&got, &want, "customvoice again (same seed)"));

    /* Sentence by sentence with pauses, as `talkbox speak` does. */
    CHECK_OK(talkbox_request_set_text(r, CASE_LONG_TEXT));
    CHECK_OK(talkbox_request_set_number(r, "split", 1));
    CHECK_OK(talkbox_request_set_number(r, "segment_chars", 0));
    CHECK_OK(talkbox_request_set_number(r, "pause_ms", CASE_LONG_PAUSE_MS));
    samples_free(&got);
    samples_free(&want);
    want = read_expected("long_form.f32");
    talkbox_result_init(&res);
    CHECK_OK(talkbox_session_speak(s, r, collect, &got, &res));
    CHECK(same_samples(&got, &want, "long form"));
    CHECK(res.segments == 2);
    /* The segments one after another (the default runs them at once): the same samples. */
    CHECK_OK(talkbox_request_set_number(r, "parallel", 1));
    samples_free(&got);
    CHECK_OK(talkbox_session_speak(s, r, collect, &got, &res));
    CHECK(same_samples(&got, &want, "long form, parallel 1"));
    CHECK_ERROR(talkbox_request_set_number(r, "parallel", 65), TALKBOX_ERROR_INVALID_ARGUMENT, "parallel");
    samples_free(&got);
    samples_free(&want);
    talkbox_request_free(r);
}

typedef struct {
    size_t count;
    talkbox_segment seen[4];
    char text[4][64], voice[4][64];
} Segments;

static void note_segment(const talkbox_segment* seg, void* user) {
    Segments* s = (Segments*)user;
    if (s->count < 4) {
        s->seen[s->count] = *seg;
        snprintf(s->text[s->count], sizeof s->text[0], "%s", seg->text);
        snprintf(s->voice[s->count], sizeof s->voice[0], "%s", seg->voice ? seg->voice : "(null)");
    }
    ++s->count;
}

/* Collects the audio (user data's first member) and the segments. */
typedef struct {
    Samples audio;
    Segments segments;
} Spoken;

static int collect_spoken(const float* pcm, size_t n, void* user) { return collect(pcm, n, &((Spoken*)user)->audio); }
static void note_spoken(const talkbox_segment* seg, void* user) { note_segment(seg, &((Spoken*)user)->segments); }

/* talkbox_session_speak_segments: each segment's place in the audio, exact to the sample: the first
 * starts at 0, the next 100 ms (the <break>) after its end, the last ends with the audio. */
static void test_segments(talkbox_session* s, const talkbox_model* m) {
    talkbox_request* r = customvoice_request(m);
    CHECK_OK(talkbox_request_set_text(r, CASE_LONG_SSML));
    CHECK_OK(talkbox_request_set_number(r, "segment_chars", 0));
    CHECK_OK(talkbox_request_set_input_format(r, "ssml"));
    Samples want = read_expected("long_form.f32");
    Spoken got;
    memset(&got, 0, sizeof got);
    CHECK_OK(talkbox_session_speak_segments(s, r, collect_spoken, note_spoken, &got, NULL));
    CHECK(same_samples(&got.audio, &want, "long form with segments"));
    CHECK(got.segments.count == 2);
    CHECK(got.segments.seen[0].index == 0 && got.segments.seen[1].index == 1);
    CHECK(got.segments.seen[0].start == 0);
    CHECK(got.segments.seen[0].end > 0);
    CHECK(got.segments.seen[1].start == got.segments.seen[0].end + (size_t)talkbox_model_sample_rate(m) * CASE_LONG_PAUSE_MS / 1000);
    CHECK(got.segments.seen[1].end == got.audio.count);
    CHECK(strcmp(got.segments.text[0], "Hello there.") == 0);
    CHECK(strcmp(got.segments.text[1], "How are you today?") == 0);
    CHECK(strcmp(got.segments.voice[0], talkbox_model_speaker(m, 0)) == 0);
    /* No segment callback: the same as talkbox_session_speak; a callback that stops: no segments. */
    samples_free(&got.audio);
    CHECK_OK(talkbox_session_speak_segments(s, r, collect_spoken, NULL, &got, NULL));
    CHECK(same_samples(&got.audio, &want, "long form, no segment callback"));
    samples_free(&got.audio);
    got.segments.count = 0;
    got.audio.stop_after_calls = 1;
    CHECK_ERROR(talkbox_session_speak_segments(s, r, collect_spoken, note_spoken, &got, NULL), TALKBOX_CANCELLED, "stopped by the audio callback");
    CHECK(got.segments.count == 0);
    CHECK_ERROR(talkbox_session_speak_segments(s, r, NULL, note_spoken, &got, NULL), TALKBOX_ERROR_INVALID_ARGUMENT,
                "talkbox_session_speak_segments");
    samples_free(&got.audio);
    samples_free(&want);
    talkbox_request_free(r);
}

/* SSML through talkbox_request_set_input_format: the long-form case written as SSML gives its
 * samples; malformed SSML is refused naming the line and column. */
static void test_ssml(talkbox_session* s, const talkbox_model* m) {
    talkbox_request* r = customvoice_request(m);
    CHECK_OK(talkbox_request_set_text(r, CASE_LONG_SSML));
    CHECK_OK(talkbox_request_set_number(r, "split", 1));
    CHECK_OK(talkbox_request_set_number(r, "segment_chars", 0));
    CHECK_OK(talkbox_request_set_input_format(r, "ssml"));
    Samples want = read_expected("long_form.f32"), got = {0};
    talkbox_result res;
    talkbox_result_init(&res);
    CHECK_OK(talkbox_session_speak(s, r, collect, &got, &res));
    CHECK(same_samples(&got, &want, "long form as SSML"));
    CHECK(res.segments == 2);
    CHECK_OK(talkbox_request_set_text(r, "<speak>\n<voice name=\"nobody\">Hi.</voice></speak>"));
    CHECK_ERROR(talkbox_session_speak(s, r, collect, &got, &res), TALKBOX_ERROR_INVALID_ARGUMENT, "SSML line 2, column 1: unknown voice 'nobody'");
    CHECK_OK(talkbox_request_set_text(r, "<speak><s>Hi.</speak>"));
    CHECK_ERROR(talkbox_session_speak(s, r, collect, &got, &res), TALKBOX_ERROR_INVALID_ARGUMENT, "does not match <s> opened at line 1, column 8");
    CHECK_ERROR(talkbox_request_set_input_format(r, "html"), TALKBOX_ERROR_INVALID_ARGUMENT, "format must be \"text\" or \"ssml\"");
    CHECK_OK(talkbox_request_set_input_format(r, NULL)); /* plain text again: the tags are words */
    CHECK_OK(talkbox_session_speak(s, r, collect, &got, &res));
    samples_free(&got);
    samples_free(&want);
    talkbox_request_free(r);
}

/* The file a speak_to_file call writes: a 16-bit WAV of exactly the streamed samples. */
static void test_files(talkbox_session* s, const talkbox_model* m) {
    talkbox_request* r = customvoice_request(m);
    char* wav = join_path(tmp_dir, "out.wav");
    talkbox_result res;
    talkbox_result_init(&res);
    CHECK_OK(talkbox_session_speak_to_file(s, r, wav, NULL, &res));
    Samples want = read_expected("customvoice.f32");
    CHECK(res.samples == want.count);
    FILE* f = fopen(wav, "rb");
    CHECK(f != NULL);
    if (f) {
        char head[12];
        CHECK(fread(head, 1, 12, f) == 12 && memcmp(head, "RIFF", 4) == 0 && memcmp(head + 8, "WAVE", 4) == 0);
        fseek(f, 0, SEEK_END);
        CHECK((size_t)ftell(f) == 44 + 2 * want.count);
        fclose(f);
    }
    char* flac = join_path(tmp_dir, "out.flac");
    CHECK_OK(talkbox_write_audio(flac, want.data, want.count, 24000, "flac"));
    f = fopen(flac, "rb");
    CHECK(f != NULL);
    if (f) fclose(f);
    char* nothing = join_path(tmp_dir, "nothing.wav");
    CHECK_ERROR(talkbox_session_speak_to_file(s, r, nothing, "wav99", NULL), TALKBOX_ERROR_INVALID_ARGUMENT, "wav99");
    CHECK_ERROR(talkbox_write_audio(nothing, want.data, want.count, 0, NULL), TALKBOX_ERROR_INVALID_ARGUMENT, "sample_rate");
    CHECK_ERROR(talkbox_write_audio("/nonexistent/dir/x.wav", want.data, want.count, 24000, NULL), TALKBOX_ERROR_IO,
                "/nonexistent/dir/x.wav");
    f = fopen(nothing, "rb");
    CHECK(f == NULL);
    if (f) fclose(f);
    free(wav);
    free(flac);
    free(nothing);
    samples_free(&want);
    talkbox_request_free(r);
}

static void test_request_errors(talkbox_session* s, const talkbox_model* m) {
    talkbox_request* r = customvoice_request(m);
    Samples got;
    memset(&got, 0, sizeof got);
    CHECK_ERROR(talkbox_request_set_number(r, "temprature", 0.5), TALKBOX_ERROR_INVALID_ARGUMENT, "unknown request setting 'temprature'");
    CHECK_ERROR(talkbox_request_set_number(r, "top_k", 2.5), TALKBOX_ERROR_INVALID_ARGUMENT, "top_k must be a whole number");
    CHECK_ERROR(talkbox_request_set_number(r, "max_frames", -1), TALKBOX_ERROR_INVALID_ARGUMENT, "max_frames must be a whole number");
    CHECK_ERROR(talkbox_request_set_number(r, "temperature", INFINITY), TALKBOX_ERROR_INVALID_ARGUMENT, "finite");
    CHECK_ERROR(talkbox_request_set_number(r, "split", 2), TALKBOX_ERROR_INVALID_ARGUMENT, "split must be");
    CHECK_ERROR(talkbox_request_set_number(r, "chunk", 0), TALKBOX_ERROR_INVALID_ARGUMENT, "chunk must be");
    CHECK_ERROR(talkbox_request_set_text_mode(r, 7), TALKBOX_ERROR_INVALID_ARGUMENT, "unknown text mode 7");
    CHECK_ERROR(talkbox_request_set_text(r, NULL), TALKBOX_ERROR_INVALID_ARGUMENT, "text is NULL");

    /* The model's range, checked when it speaks (and by talkbox_model_check). */
    CHECK_OK(talkbox_request_set_number(r, "top_p", 2));
    CHECK_ERROR(talkbox_model_check(m, r), TALKBOX_ERROR_INVALID_ARGUMENT, "top_p must be in (0, 1]");
    CHECK_ERROR(talkbox_session_speak(s, r, collect, &got, NULL), TALKBOX_ERROR_INVALID_ARGUMENT, "top_p must be in (0, 1]");
    CHECK(got.calls == 0);
    CHECK_OK(talkbox_request_set_number(r, "top_p", NAN)); /* back to the model's default */
    CHECK_OK(talkbox_model_check(m, r));

    /* A Chatterbox setting on Qwen3-TTS is refused, never ignored. */
    CHECK_OK(talkbox_request_set_number(r, "exaggeration", 0.7));
    CHECK_ERROR(talkbox_session_speak(s, r, collect, &got, NULL), TALKBOX_ERROR_INVALID_ARGUMENT, "exaggeration is not a setting of");
    CHECK_OK(talkbox_request_set_number(r, "exaggeration", NAN));

    CHECK_OK(talkbox_request_set_speaker(r, "nobody"));
    CHECK_ERROR(talkbox_model_check(m, r), TALKBOX_ERROR_INVALID_ARGUMENT, "unknown speaker 'nobody' (supported: ");
    CHECK_ERROR(talkbox_session_speak(s, r, collect, &got, NULL), TALKBOX_ERROR_INVALID_ARGUMENT, "unknown speaker 'nobody'");
    CHECK_OK(talkbox_request_set_speaker(r, talkbox_model_speaker(m, 0)));

    CHECK_OK(talkbox_request_set_language(r, "klingon"));
    CHECK_ERROR(talkbox_session_speak(s, r, collect, &got, NULL), TALKBOX_ERROR_INVALID_ARGUMENT, "klingon");
    CHECK_OK(talkbox_request_set_language(r, NULL));

    CHECK_OK(talkbox_request_set_text(r, "   "));
    CHECK_ERROR(talkbox_session_speak(s, r, collect, &got, NULL), TALKBOX_ERROR_INVALID_ARGUMENT, "the text to speak is empty");
    /* Text with nothing to say, refused before any synthesis (issue 31): zero-width characters, a
       byte order mark, bidi controls, C0 controls, no-break and ideographic spaces. */
    {
        const char* nothing[] = {"\xe2\x80\x8b\xe2\x80\x8d", "\xef\xbb\xbf", "\xe2\x80\xae\xe2\x81\xa6\xe2\x81\xa9", "\x01\x07\x1b",
                                 "\xc2\xa0\xe3\x80\x80\t"};
        size_t i;
        for (i = 0; i < sizeof nothing / sizeof nothing[0]; ++i) {
            CHECK_OK(talkbox_request_set_text(r, nothing[i]));
            CHECK_ERROR(talkbox_session_speak(s, r, collect, &got, NULL), TALKBOX_ERROR_INVALID_ARGUMENT,
                        "the text to speak is empty: it holds nothing to say");
        }
    }
    CHECK_ERROR(talkbox_session_speak(s, r, NULL, NULL, NULL), TALKBOX_ERROR_INVALID_ARGUMENT, "callback is NULL");
    CHECK(got.calls == 0);

    /* A CustomVoice model makes no voices. */
    talkbox_voice* v = NULL;
    CHECK_ERROR(talkbox_voice_create(m, clip_path, NULL, &v), TALKBOX_ERROR_UNSUPPORTED, "does not clone voices");
    CHECK(v == NULL);
    samples_free(&got);
    talkbox_request_free(r);
}

/* Cancellation by the callback's return value. */
static void test_callback_stop(talkbox_session* s, const talkbox_model* m) {
    talkbox_request* r = customvoice_request(m);
    CHECK_OK(talkbox_request_set_number(r, "max_frames", CASE_CANCEL_MAX_FRAMES));
    CHECK_OK(talkbox_request_set_number(r, "stall_frames", 0));
    Samples got;
    memset(&got, 0, sizeof got);
    got.stop_after_calls = 1;
    talkbox_result res;
    talkbox_result_init(&res);
    CHECK_ERROR(talkbox_session_speak(s, r, collect, &got, &res), TALKBOX_CANCELLED, "stopped by the audio callback");
    CHECK(got.calls == 1); /* never called again after it said stop */
    CHECK(res.stop_reason == TALKBOX_STOP_CANCELLED);
    CHECK(res.samples == got.count);
    samples_free(&got);
    /* The session is usable again and the next call is not cancelled. */
    talkbox_request_free(r);
    r = customvoice_request(m);
    Samples want = read_expected("customvoice.f32");
    CHECK_OK(talkbox_session_speak(s, r, collect, &got, NULL));
    CHECK(same_samples(&got, &want, "after a stop"));
    samples_free(&got);
    samples_free(&want);
    talkbox_request_free(r);
}

/* Cancellation from another thread: the callback waits until the other thread has called
 * talkbox_session_cancel, so the cancel lands while synthesis is running, every time. */
typedef struct {
    talkbox_session* session;
    pthread_mutex_t lock;
    pthread_cond_t changed;
    int audio_started, cancelled;
    size_t calls;
} CancelRace;

static int wait_for_cancel(const float* pcm, size_t n, void* user) {
    (void)pcm;
    (void)n;
    CancelRace* c = (CancelRace*)user;
    pthread_mutex_lock(&c->lock);
    ++c->calls;
    c->audio_started = 1;
    pthread_cond_broadcast(&c->changed);
    while (!c->cancelled) pthread_cond_wait(&c->changed, &c->lock);
    pthread_mutex_unlock(&c->lock);
    return 0;
}

static void* canceller(void* arg) {
    CancelRace* c = (CancelRace*)arg;
    pthread_mutex_lock(&c->lock);
    while (!c->audio_started) pthread_cond_wait(&c->changed, &c->lock);
    talkbox_session_cancel(c->session);
    c->cancelled = 1;
    pthread_cond_broadcast(&c->changed);
    pthread_mutex_unlock(&c->lock);
    return NULL;
}

static void test_cancel_from_another_thread(talkbox_session* s, const talkbox_model* m) {
    talkbox_request* r = customvoice_request(m);
    CHECK_OK(talkbox_request_set_number(r, "max_frames", CASE_CANCEL_MAX_FRAMES));
    CHECK_OK(talkbox_request_set_number(r, "stall_frames", 0));
    CHECK_OK(talkbox_request_set_number(r, "min_frames", CASE_CANCEL_MAX_FRAMES)); /* no early EOS */
    Samples full;
    memset(&full, 0, sizeof full);
    talkbox_result res;
    talkbox_result_init(&res);
    CHECK_OK(talkbox_session_speak(s, r, collect, &full, &res));
    CHECK(res.frames == CASE_CANCEL_MAX_FRAMES);

    CancelRace c;
    memset(&c, 0, sizeof c);
    c.session = s;
    pthread_mutex_init(&c.lock, NULL);
    pthread_cond_init(&c.changed, NULL);
    pthread_t thread;
    pthread_create(&thread, NULL, canceller, &c);
    talkbox_result_init(&res);
    CHECK_ERROR(talkbox_session_speak(s, r, wait_for_cancel, &c, &res), TALKBOX_CANCELLED, "cancelled by talkbox_session_cancel");
    pthread_join(thread, NULL);
    CHECK(res.stop_reason == TALKBOX_STOP_CANCELLED);
    CHECK(c.calls == 1); /* no audio reaches the callback once the cancel is seen */
    CHECK(res.samples < full.count);

    /* A cancel while nothing runs stops the next call at once (never lost to a race)... */
    talkbox_session_cancel(s);
    Samples got;
    memset(&got, 0, sizeof got);
    CHECK_ERROR(talkbox_session_speak(s, r, collect, &got, &res), TALKBOX_CANCELLED, "cancelled");
    CHECK(got.calls == 0 && res.samples == 0);
    /* ...and only that one. */
    CHECK_OK(talkbox_session_speak(s, r, collect, &got, &res));
    CHECK(same_samples(&got, &full, "after a cancel"));
    pthread_mutex_destroy(&c.lock);
    pthread_cond_destroy(&c.changed);
    samples_free(&got);
    samples_free(&full);
    talkbox_request_free(r);
}

/* Two sessions on one model, on two threads at once: each gets the single-thread samples. */
typedef struct {
    talkbox_session* session;
    talkbox_request* request;
    Samples got;
    talkbox_status status;
} Worker;

static void* work(void* arg) {
    Worker* w = (Worker*)arg;
    w->status = talkbox_session_speak(w->session, w->request, collect, &w->got, NULL);
    return NULL;
}

static void test_sessions_on_threads(talkbox_model* m) {
    Worker w[2];
    pthread_t t[2];
    memset(w, 0, sizeof w);
    for (int i = 0; i < 2; ++i) {
        CHECK_OK(talkbox_session_new(m, &w[i].session));
        w[i].request = customvoice_request(m);
    }
    for (int i = 0; i < 2; ++i) pthread_create(&t[i], NULL, work, &w[i]);
    Samples want = read_expected("customvoice.f32");
    for (int i = 0; i < 2; ++i) {
        pthread_join(t[i], NULL);
        CHECK(w[i].status == TALKBOX_OK);
        CHECK(same_samples(&w[i].got, &want, "concurrent session"));
        samples_free(&w[i].got);
        talkbox_request_free(w[i].request);
        talkbox_session_free(w[i].session);
    }
    samples_free(&want);
}

static void test_base_voice(void) {
    talkbox_model* m = load(base_path);
    unsigned flags = talkbox_model_flags(m);
    CHECK((flags & TALKBOX_MODEL_CLONES) && (flags & TALKBOX_MODEL_NEEDS_VOICE) && (flags & TALKBOX_MODEL_CLONE_TRANSCRIPT));
    CHECK(talkbox_model_speaker_count(m) == 0);
    talkbox_session* s = NULL;
    CHECK_OK(talkbox_session_new(m, &s));
    talkbox_request* r = NULL;
    CHECK_OK(talkbox_request_new(&r));
    CHECK_OK(talkbox_request_set_text(r, CASE_TEXT));
    CHECK_OK(talkbox_request_set_seed(r, CASE_SEED));
    CHECK_OK(talkbox_request_set_number(r, "max_frames", CASE_MAX_FRAMES));
    Samples got;
    memset(&got, 0, sizeof got);
    CHECK_ERROR(talkbox_model_check(m, r), TALKBOX_ERROR_INVALID_ARGUMENT, "needs a voice: give a cloned voice (talkbox_request_set_voice");
    CHECK_ERROR(talkbox_session_speak(s, r, collect, &got, NULL), TALKBOX_ERROR_INVALID_ARGUMENT, "needs a voice");

    talkbox_voice* v = NULL;
    CHECK_ERROR(talkbox_voice_create(m, "/nonexistent/clip.wav", NULL, &v), TALKBOX_ERROR_NOT_FOUND, "/nonexistent/clip.wav");
    CHECK_OK(talkbox_voice_create(m, clip_path, NULL, &v)); /* x-vector: no transcript */
    CHECK(strcmp(talkbox_voice_mode(v), "x_vector") == 0);
    CHECK(strlen(talkbox_voice_description(v)) > 0);
    CHECK_OK(talkbox_request_set_voice(r, v));
    char* path = join_path(tmp_dir, "clip.voice");
    CHECK_OK(talkbox_voice_save(v, path));
    talkbox_voice_free(v); /* the request keeps its own reference */

    Samples want = read_expected("base.f32");
    CHECK_OK(talkbox_session_speak(s, r, collect, &got, NULL));
    CHECK(same_samples(&got, &want, "x-vector clone"));
    samples_free(&got);

    /* The saved voice speaks the same. */
    talkbox_voice* loaded = NULL;
    CHECK_OK(talkbox_voice_load(path, &loaded));
    CHECK(strcmp(talkbox_voice_mode(loaded), "x_vector") == 0);
    CHECK_OK(talkbox_request_set_voice(r, loaded));
    CHECK_OK(talkbox_session_speak(s, r, collect, &got, NULL));
    CHECK(same_samples(&got, &want, "x-vector clone from its file"));
    samples_free(&got);

    /* A session keeps its model: the model handle may go first. */
    talkbox_model_free(m);
    CHECK_OK(talkbox_session_speak(s, r, collect, &got, NULL));
    CHECK(same_samples(&got, &want, "after talkbox_model_free"));
    samples_free(&got);
    samples_free(&want);

    talkbox_model* cv = load(customvoice_path);
    CHECK_ERROR(talkbox_model_check(cv, r), TALKBOX_ERROR_INVALID_ARGUMENT, "a cloned voice is not a setting of");
    talkbox_model_free(cv);
    talkbox_voice_free(loaded);
    talkbox_request_free(r);
    talkbox_session_free(s);
    free(path);
}

static void test_chatterbox(void) {
    talkbox_model* m = load(chatterbox_path);
    CHECK(strcmp(talkbox_model_architecture(m), "chatterbox") == 0);
    CHECK(strcmp(talkbox_model_family(m), "Chatterbox") == 0);
    CHECK(talkbox_model_flags(m) & TALKBOX_MODEL_BUILTIN_VOICE);
    CHECK(talkbox_model_language_count(m) == 23);
    talkbox_session* s = NULL;
    CHECK_OK(talkbox_session_new(m, &s));
    talkbox_request* r = NULL;
    CHECK_OK(talkbox_request_new(&r));
    CHECK_OK(talkbox_request_set_text(r, CASE_TEXT));
    CHECK_OK(talkbox_request_set_seed(r, CASE_SEED));
    CHECK_OK(talkbox_request_set_number(r, "max_frames", CASE_CHATTERBOX_MAX_FRAMES));
    /* The expected audio is unmarked (Chatterbox marks by default: test_watermark). */
    CHECK_OK(talkbox_request_set_number(r, "watermark", 0));
    CHECK_ERROR(talkbox_request_set_number(r, "watermark", 2), TALKBOX_ERROR_INVALID_ARGUMENT, "watermark must be a whole number in [0, 1]");
    Samples got, want = read_expected("chatterbox.f32");
    memset(&got, 0, sizeof got);
    CHECK_OK(talkbox_session_speak(s, r, collect, &got, NULL));
    CHECK(same_samples(&got, &want, "chatterbox"));
    samples_free(&got);
    /* Qwen3-TTS settings are refused for Chatterbox. */
    CHECK_OK(talkbox_request_set_number(r, "subtalker_top_k", 5));
    CHECK_ERROR(talkbox_session_speak(s, r, collect, &got, NULL), TALKBOX_ERROR_INVALID_ARGUMENT, "subtalker_top_k is not a setting of");
    CHECK_OK(talkbox_request_set_number(r, "subtalker_top_k", NAN));
    /* Chatterbox clones from the audio alone. */
    talkbox_voice* v = NULL;
    CHECK_ERROR(talkbox_voice_create(m, clip_path, "a transcript", &v), TALKBOX_ERROR_INVALID_ARGUMENT, "drop the reference transcript");
    /* Voice conversion: 1 s of a tone at 16 kHz is 25 speech tokens, at most 25 · 960 samples at
     * 24 kHz (S3Gen's cut at the built-in voice's prompt may take a few). Unmarked (watermark 0): the
     * tests' environment has no Perth checkpoint, and marking would say so on stderr. */
    CHECK(talkbox_model_flags(m) & TALKBOX_MODEL_CONVERTS_VOICES);
    float tone[16000];
    for (int i = 0; i < 16000; ++i) tone[i] = 0.3f * (float)sin(2.0 * 3.14159265358979 * 220.0 * i / 16000.0);
    float* converted = NULL;
    size_t converted_count = 0;
    CHECK_OK(talkbox_voice_convert(m, tone, 16000, 16000, NULL, 7, 0, &converted, &converted_count));
    CHECK(converted != NULL && converted_count > 24 * 960 && converted_count <= 25 * 960);
    talkbox_samples_free(converted);
    tone[5] = NAN;
    CHECK_ERROR(talkbox_voice_convert(m, tone, 16000, 16000, NULL, 7, 0, &converted, &converted_count), TALKBOX_ERROR_INVALID_ARGUMENT,
                "the recording holds a non-finite sample at index 5");
    CHECK(converted == NULL && converted_count == 0);
    tone[5] = 0.0f;
    CHECK_ERROR(talkbox_voice_convert(m, tone, 1000, 16000, NULL, 7, 0, &converted, &converted_count), TALKBOX_ERROR_INVALID_ARGUMENT,
                "voice conversion needs at least 0.2 s");
    CHECK_ERROR(talkbox_voice_convert(m, tone, 16000, 16000, NULL, 7, 2, &converted, &converted_count), TALKBOX_ERROR_INVALID_ARGUMENT,
                "watermark must be 1 (marked) or 0 (unmarked), got 2");
    samples_free(&want);
    talkbox_request_free(r);
    talkbox_session_free(s);
    talkbox_model_free(m);
}

/* The Perth watermark on samples: the test's random-weight checkpoint, or none (the environment
 * names a missing file: NOT_FOUND, with what to do). */
static void test_watermark(void) {
    float clip[12000];
    for (int i = 0; i < 12000; ++i) clip[i] = 0.3f * (float)sin(2.0 * 3.14159265358979 * 180.0 * i / 24000.0);
    talkbox_watermark_result result;
    CHECK_ERROR(talkbox_watermark_detect(NULL, clip, 12000, 24000, &result), TALKBOX_ERROR_NOT_FOUND,
                "talkbox watermark convert perth_net_250000.pth.tar");
    float* marked = NULL;
    size_t marked_count = 0;
    /* 0.5 s: 16000 samples at 32 kHz, a whole number of hops, back to 12000 at 24 kHz. */
    CHECK_OK(talkbox_watermark_embed(perth_path, clip, 12000, 24000, &marked, &marked_count));
    CHECK(marked != NULL && marked_count == 12000);
    CHECK_OK(talkbox_watermark_detect(perth_path, marked, marked_count, 24000, &result));
    CHECK(result.readable == 1 && result.confidence >= 0.0 && result.confidence <= 1.0);
    CHECK(result.detected == (result.confidence > 0.5));
    talkbox_samples_free(marked);
    CHECK_ERROR(talkbox_watermark_embed(perth_path, clip, 100, 24000, &marked, &marked_count), TALKBOX_ERROR_INVALID_ARGUMENT,
                "too short");
    CHECK(marked == NULL && marked_count == 0);
    clip[3] = NAN;
    CHECK_ERROR(talkbox_watermark_detect(perth_path, clip, 12000, 24000, &result), TALKBOX_ERROR_INVALID_ARGUMENT,
                "non-finite sample at index 3");
}

static int exists(const char* path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Samples that are not numbers, or absurd ones, are refused before anything is written, whatever
 * the format (LAME used to kill its caller on NaN); so is a sample rate no file can hold. */
static void test_hostile_samples(void) {
    char* out = join_path(tmp_dir, "hostile.mp3");
    const char* formats[] = {"mp3", "wav16", "wav32", "flac", "aac"};
    float bad[][4] = {{0.1f, NAN, 0.2f, 0.3f}, {0.1f, 0.2f, INFINITY, 0.3f}, {-INFINITY, 0, 0, 0}, {0.1f, 0.2f, 0.3f, 1e30f}};
    const char* messages[] = {"non-finite sample at index 1", "non-finite sample at index 2", "non-finite sample at index 0",
                              "sample of 1e+30 at index 3, beyond the accepted [-16, 16]"};
    for (size_t f = 0; f < sizeof formats / sizeof *formats; ++f) {
        for (size_t b = 0; b < sizeof bad / sizeof *bad; ++b) {
            CHECK_ERROR(talkbox_write_audio(out, bad[b], 4, 24000, formats[f]), TALKBOX_ERROR_INVALID_ARGUMENT, messages[b]);
            CHECK_ERROR(talkbox_write_audio(out, bad[b], 4, 24000, formats[f]), TALKBOX_ERROR_INVALID_ARGUMENT,
                        "talkbox_write_audio: samples holds");
            CHECK(!exists(out));
        }
    }
    float fine[4] = {0.1f, -0.2f, 1.5f, -1.5f}; /* a little hot is real audio */
    CHECK_ERROR(talkbox_write_audio(out, fine, 4, INT_MAX, "wav16"), TALKBOX_ERROR_INVALID_ARGUMENT,
                "talkbox_write_audio: sample_rate must be in [1, 768000] Hz, got 2147483647");
    CHECK_ERROR(talkbox_write_audio(out, fine, 4, -8000, "mp3"), TALKBOX_ERROR_INVALID_ARGUMENT, "got -8000");
    CHECK(!exists(out));
    talkbox_model_options o;
    talkbox_model_options_init(&o);
    o.threads = INT_MAX;
    talkbox_model* m = NULL;
    CHECK_ERROR(talkbox_model_load(customvoice_path, &o, &m), TALKBOX_ERROR_INVALID_ARGUMENT,
                "talkbox_model_load: threads must be in [0, 4096], got 2147483647");
    CHECK(m == NULL);
    free(out);
}

typedef struct {
    const char* path;
    char head[4];
    size_t bytes;
} FifoReader;

static void* read_fifo(void* arg) {
    FifoReader* r = (FifoReader*)arg;
    FILE* f = fopen(r->path, "rb");
    if (!f) return NULL;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        if (r->bytes == 0 && n >= 4) memcpy(r->head, buf, 4);
        r->bytes += n;
    }
    fclose(f);
    return NULL;
}

/* A device or a FIFO is written in place, never replaced by a regular file, and a write error
 * there (a full device) is reported; a missing folder fails before any synthesis. */
static void test_output_files(talkbox_session* s, const talkbox_model* m) {
    float pcm[480];
    for (size_t i = 0; i < 480; ++i) pcm[i] = 0.25f * sinf((float)i * 0.1f);

    char* fifo = join_path(tmp_dir, "audio.fifo");
    CHECK(mkfifo(fifo, 0600) == 0);
    FifoReader reader = {fifo, {0}, 0};
    pthread_t t;
    CHECK(pthread_create(&t, NULL, read_fifo, &reader) == 0);
    CHECK_OK(talkbox_write_audio(fifo, pcm, 480, 24000, "wav16"));
    pthread_join(t, NULL);
    struct stat st;
    CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
    CHECK(reader.bytes == 44 + 2 * 480 && memcmp(reader.head, "RIFF", 4) == 0);

    /* Our own device nodes where we may make them (as root), so that a regression cannot replace
     * the system's; /dev/full otherwise, which an unprivileged writer cannot replace either. */
    char* null_node = join_path(tmp_dir, "null");
    char* full_node = join_path(tmp_dir, "full");
    const int own_nodes = mknod(null_node, S_IFCHR | 0666, makedev(1, 3)) == 0 && mknod(full_node, S_IFCHR | 0666, makedev(1, 7)) == 0;
    const char* null_path = own_nodes ? null_node : "/dev/null";
    const char* full_path = own_nodes ? full_node : "/dev/full";
    CHECK_OK(talkbox_write_audio(null_path, pcm, 480, 24000, "mp3"));
    CHECK(lstat(null_path, &st) == 0 && S_ISCHR(st.st_mode));
    CHECK_ERROR(talkbox_write_audio(full_path, pcm, 480, 24000, "wav16"), TALKBOX_ERROR_IO, "No space left on device");
    CHECK(lstat(full_path, &st) == 0 && S_ISCHR(st.st_mode));

    /* A missing folder: refused before the synthesis (which a cancel would have stopped). */
    talkbox_request* r = customvoice_request(m);
    char* missing = join_path(tmp_dir, "no-such-folder/out.wav");
    CHECK_ERROR(talkbox_session_speak_to_file(s, r, missing, "wav16", NULL), TALKBOX_ERROR_IO,
                "talkbox_session_speak_to_file: path: cannot write");
    CHECK(strstr(talkbox_last_error(), "no-such-folder' does not exist") != NULL);
    char* folder = join_path(tmp_dir, "");
    CHECK_ERROR(talkbox_write_audio(folder, pcm, 480, 24000, "wav16"), TALKBOX_ERROR_IO, "it is a folder");

    /* A new file gets 0666 & ~umask (not 0600); a replaced one keeps its mode. */
    char* made = join_path(tmp_dir, "mode.wav");
    const mode_t old_mask = umask(027);
    CHECK_OK(talkbox_write_audio(made, pcm, 480, 24000, "wav16"));
    CHECK(stat(made, &st) == 0 && (st.st_mode & 0777) == 0640);
    CHECK(chmod(made, 0604) == 0);
    CHECK_OK(talkbox_write_audio(made, pcm, 240, 24000, "wav16"));
    CHECK(stat(made, &st) == 0 && (st.st_mode & 0777) == 0604 && st.st_size == 44 + 2 * 240);
    umask(old_mask);

    unlink(fifo);
    unlink(null_node);
    unlink(full_node);
    unlink(made);
    talkbox_request_free(r);
    free(fifo);
    free(null_node);
    free(full_node);
    free(missing);
    free(folder);
    free(made);
}

int main(int argc, char** argv) {
    if (argc != 8) {
        fprintf(stderr, "usage: %s CUSTOMVOICE.gguf BASE.gguf CHATTERBOX.gguf CLIP.wav EXPECTED_DIR TMP_DIR PERTH.gguf\n", argv[0]);
        return 2;
    }
    customvoice_path = argv[1];
    base_path = argv[2];
    chatterbox_path = argv[3];
    clip_path = argv[4];
    expected_dir = argv[5];
    tmp_dir = argv[6];
    perth_path = argv[7];

    test_version_and_statuses();
    test_null_arguments();
    test_bad_files();
    talkbox_model* m = load(customvoice_path);
    talkbox_session* s = NULL;
    CHECK_OK(talkbox_session_new(m, &s));
    test_capabilities(m);
    test_speak_parity(s, m);
    test_ssml(s, m);
    test_segments(s, m);
    test_files(s, m);
    test_request_errors(s, m);
    test_callback_stop(s, m);
    test_cancel_from_another_thread(s, m);
    test_sessions_on_threads(m);
    test_hostile_samples();
    test_output_files(s, m);
    talkbox_session_free(s);
    talkbox_model_free(m);
    test_base_voice();
    test_chatterbox();
    test_watermark();

    printf("%d of %d checks passed\n", checks - failures, checks);
    return failures ? 1 : 0;
}
