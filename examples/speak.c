/* The C API in a page: load a model, pick a voice it offers, stream the speech through a
 * callback and write it to a WAV file. Uses nothing but include/talkbox/talkbox.h.
 *
 *   speak MODEL.gguf "Text to speak." OUT.wav [VOICE_FILE]
 *
 * Build it against an installed libtalkbox (docs/c-api.md):
 *   cc speak.c -o speak $(pkg-config --cflags --libs talkbox) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <talkbox/talkbox.h>

typedef struct {
    float* samples;
    size_t count, capacity;
} Audio;

/* Called with each piece of audio as soon as it exists; returning nonzero would stop synthesis. */
static int on_audio(const float* pcm, size_t n, void* user) {
    Audio* a = (Audio*)user;
    if (a->count + n > a->capacity) {
        size_t cap = a->capacity ? a->capacity * 2 : 24000;
        while (cap < a->count + n) cap *= 2;
        float* grown = (float*)realloc(a->samples, cap * sizeof(float));
        if (!grown) return 1; /* out of memory: stop */
        a->samples = grown;
        a->capacity = cap;
    }
    memcpy(a->samples + a->count, pcm, n * sizeof(float));
    a->count += n;
    return 0;
}

int main(int argc, char** argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s MODEL.gguf TEXT OUT.wav [VOICE_FILE]\n", argv[0]);
        return 2;
    }
    talkbox_model* model = NULL;
    talkbox_session* session = NULL;
    talkbox_request* request = NULL;
    talkbox_voice* voice = NULL;
    Audio audio = {NULL, 0, 0};
    talkbox_result result;
    unsigned flags;
    int exit_code = 1;

    if (talkbox_model_load(argv[1], NULL, &model) != TALKBOX_OK) goto fail;
    if (talkbox_request_new(&request) != TALKBOX_OK || talkbox_request_set_text(request, argv[2]) != TALKBOX_OK) goto fail;
    /* Ask the model what voice fits: a voice file, a preset speaker, a description, its own. */
    flags = talkbox_model_flags(model);
    if (argc == 5) {
        if (talkbox_voice_load(argv[4], &voice) != TALKBOX_OK || talkbox_request_set_voice(request, voice) != TALKBOX_OK) goto fail;
    } else if (talkbox_model_speaker_count(model) > 0) {
        talkbox_request_set_speaker(request, talkbox_model_speaker(model, 0));
    } else if (flags & TALKBOX_MODEL_DESIGNS_VOICE) {
        talkbox_request_set_instructions(request, "A calm, clear voice.");
    } else if (flags & TALKBOX_MODEL_NEEDS_VOICE) {
        fprintf(stderr, "%s clones voices: give a voice file (talkbox voice create makes one)\n", talkbox_model_description(model));
        goto done;
    }
    if (talkbox_session_new(model, &session) != TALKBOX_OK) goto fail;
    talkbox_result_init(&result);
    if (talkbox_session_speak(session, request, on_audio, &audio, &result) != TALKBOX_OK) goto fail;
    if (talkbox_write_audio(argv[3], audio.samples, audio.count, talkbox_model_sample_rate(model), "wav16") != TALKBOX_OK) goto fail;
    printf("%s (libtalkbox %s): %zu frames, %.2f s of audio, first audio after %.0f ms, seed %llu\n",
           talkbox_model_description(model), talkbox_version(), result.frames,
           (double)audio.count / talkbox_model_sample_rate(model), result.first_audio_ms, (unsigned long long)result.seed);
    exit_code = 0;
    goto done;
fail:
    fprintf(stderr, "error: %s\n", talkbox_last_error());
done:
    free(audio.samples);
    talkbox_voice_free(voice);
    talkbox_request_free(request);
    talkbox_session_free(session);
    talkbox_model_free(model);
    return exit_code;
}
