/* talkbox — the C API (libtalkbox.so): text-to-speech with Qwen3-TTS and Chatterbox GGUF models
 * for C and for other languages' foreign-function interfaces (bindings/python uses ctypes).
 * docs/c-api.md describes it with examples.
 *
 *   talkbox_model* model;
 *   if (talkbox_model_load("model.gguf", NULL, &model) != TALKBOX_OK) {
 *       fprintf(stderr, "%s\n", talkbox_last_error());
 *       return 1;
 *   }
 *   talkbox_session* session;
 *   talkbox_session_new(model, &session);       // one synthesis at a time
 *   talkbox_request* request;
 *   talkbox_request_new(&request);
 *   talkbox_request_set_text(request, "Hello!");
 *   talkbox_request_set_speaker(request, talkbox_model_speaker(model, 0));
 *   talkbox_session_speak(session, request, on_audio, user_data, NULL);
 *   talkbox_request_free(request);
 *   talkbox_session_free(session);
 *   talkbox_model_free(model);
 *
 * Conventions
 * - Functions that can fail return a talkbox_status; TALKBOX_OK is 0. The message of the last
 *   status-returning call on the calling thread is talkbox_last_error() ("" after TALKBOX_OK).
 * - Handles are opaque. Passing NULL where a handle or a string is required gives
 *   TALKBOX_ERROR_INVALID_ARGUMENT, never a crash; *_free(NULL) does nothing.
 * - Strings are UTF-8 and NUL-terminated. Strings returned by the library belong to the object
 *   they came from and stay valid until it is freed.
 * - Structs that grow between versions start with `size_t struct_size`, set by the caller to
 *   sizeof(the struct) (the *_init functions do); the library reads and writes only that much.
 * - Threads: a model is immutable once loaded and may be shared by any number of threads and
 *   sessions; a session runs one synthesis at a time (calls on one session are serialised);
 *   talkbox_session_cancel may be called from any thread. A session keeps its model alive:
 *   talkbox_model_free may come before talkbox_session_free.
 * - No C++ exception crosses this API; an exhausted allocator gives TALKBOX_ERROR_OUT_OF_MEMORY. */
#ifndef TALKBOX_TALKBOX_H
#define TALKBOX_TALKBOX_H

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define TALKBOX_API
#elif defined(__GNUC__)
#define TALKBOX_API __attribute__((visibility("default")))
#else
#define TALKBOX_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header; talkbox_version() is the library's (they differ when a program
 * runs against another libtalkbox than it was compiled with). */
#define TALKBOX_VERSION_MAJOR 0
#define TALKBOX_VERSION_MINOR 1
#define TALKBOX_VERSION_PATCH 0
#define TALKBOX_VERSION_STRING "0.1.0"
/* MAJOR * 10000 + MINOR * 100 + PATCH, for #if TALKBOX_VERSION >= ... */
#define TALKBOX_VERSION (TALKBOX_VERSION_MAJOR * 10000 + TALKBOX_VERSION_MINOR * 100 + TALKBOX_VERSION_PATCH)

TALKBOX_API const char* talkbox_version(void);   /* "0.1.0" */
TALKBOX_API int talkbox_version_number(void);    /* TALKBOX_VERSION of the library */

typedef enum talkbox_status {
    TALKBOX_OK = 0,
    TALKBOX_ERROR_INVALID_ARGUMENT = 1, /* a NULL, an unknown speaker, a value out of range, a setting the model does not take */
    TALKBOX_ERROR_NOT_FOUND = 2,        /* a file (model, voice, audio) that does not exist */
    TALKBOX_ERROR_FORMAT = 3,           /* a file that exists but is not what it should be */
    TALKBOX_ERROR_IO = 4,               /* the operating system refused a read or write */
    TALKBOX_ERROR_UNSUPPORTED = 5,      /* well-formed input this build or model cannot handle */
    TALKBOX_CANCELLED = 6,              /* talkbox_session_cancel, or the audio callback asked to stop */
    TALKBOX_ERROR_EXISTS = 7,           /* a file that must be created anew is already there */
    TALKBOX_ERROR_INTERNAL = 8,         /* a bug in talkbox */
    TALKBOX_ERROR_OUT_OF_MEMORY = 9
} talkbox_status;

/* "ok", "invalid_argument", "not_found", "format", "io", "unsupported", "cancelled", "exists",
 * "internal", "out_of_memory"; "unknown" for other values. Never NULL. */
TALKBOX_API const char* talkbox_status_name(int status);
/* The message of the last status-returning call on this thread: "" after TALKBOX_OK, otherwise
 * what went wrong and where (file, field, value). Valid until this thread's next talkbox call. */
TALKBOX_API const char* talkbox_last_error(void);

typedef struct talkbox_model talkbox_model;
typedef struct talkbox_session talkbox_session;
typedef struct talkbox_request talkbox_request;
typedef struct talkbox_voice talkbox_voice;

/* ---- Models ---------------------------------------------------------------------------------- */

typedef struct talkbox_model_options {
    size_t struct_size;     /* sizeof(talkbox_model_options) */
    int threads;            /* compute threads of the process-wide executor (0: one per core) */
    int decoder_threads;    /* speech decoder threads (0: as threads) */
    int gpu;                /* deprecated: nonzero is device "cuda:0" */
    const char* kv_cache;   /* "f32" (NULL: the default), "f16", "q8_0" where the model offers it */
    /* Where the model computes: "auto", "cpu", "vulkan", "vulkan:N", "cuda", "cuda:N"
     * (NULL: the CPU). "auto" takes the first GPU with room for the weights, else the CPU, never a
     * software device; talkbox_device_count/talkbox_device_id list what there is. */
    const char* device;
    /* The speech decoder's arithmetic: "f32" (NULL: the default, the official decoder) or "int8"
     * (Qwen3-TTS on the CPU: faster, not bit-exact). */
    const char* decoder_precision;
} talkbox_model_options;

/* Fills in the defaults and struct_size. */
TALKBOX_API void talkbox_model_options_init(talkbox_model_options* options);

/* Loads a talkbox GGUF (`talkbox convert` makes one). options may be NULL (the defaults). On
 * failure *out is NULL. */
TALKBOX_API talkbox_status talkbox_model_load(const char* path, const talkbox_model_options* options, talkbox_model** out);
/* Drops the caller's reference: the weights are freed once no session uses them either. */
TALKBOX_API void talkbox_model_free(talkbox_model* model);

/* What a model offers. On a NULL model: 0, NULL or "" as the type allows. */
TALKBOX_API int talkbox_model_sample_rate(const talkbox_model* model);            /* 24000 */
TALKBOX_API double talkbox_model_frames_per_second(const talkbox_model* model);   /* 12.5 (Qwen3-TTS), 25 (Chatterbox) */
TALKBOX_API const char* talkbox_model_description(const talkbox_model* model);    /* "Qwen3-TTS 0.6b CustomVoice" */
TALKBOX_API const char* talkbox_model_family(const talkbox_model* model);         /* for people: "Qwen3-TTS", "Chatterbox" */
TALKBOX_API const char* talkbox_model_architecture(const talkbox_model* model);   /* "qwen3tts", "chatterbox" */
TALKBOX_API const char* talkbox_model_variant(const talkbox_model* model);        /* "base", "custom_voice", "voice_design", "multilingual", "english", "turbo", "nano" */
TALKBOX_API const char* talkbox_model_size(const talkbox_model* model);           /* "0.6b", "1.7b"; "" for a one-size family */
TALKBOX_API const char* talkbox_model_device(const talkbox_model* model);         /* "cpu", "vulkan:0", "cuda:0" */
/* Preset speakers (talkbox_request_set_speaker) and languages besides "auto"; index out of range: NULL. */
TALKBOX_API size_t talkbox_model_speaker_count(const talkbox_model* model);
TALKBOX_API const char* talkbox_model_speaker(const talkbox_model* model, size_t index);
TALKBOX_API size_t talkbox_model_language_count(const talkbox_model* model);
TALKBOX_API const char* talkbox_model_language(const talkbox_model* model, size_t index);

/* talkbox_model_flags: what a request may ask of the model. */
#define TALKBOX_MODEL_DESIGNS_VOICE    (1u << 0) /* set_instructions describes the voice (VoiceDesign) */
#define TALKBOX_MODEL_TAKES_INSTRUCT   (1u << 1) /* set_instructions is accepted (a style or a description) */
#define TALKBOX_MODEL_CLONES           (1u << 2) /* set_voice conditions it; talkbox_voice_create works */
#define TALKBOX_MODEL_NEEDS_VOICE      (1u << 3) /* it cannot speak without a speaker, a description or a voice */
#define TALKBOX_MODEL_BUILTIN_VOICE    (1u << 4) /* it speaks with a voice of its own when the request names none */
#define TALKBOX_MODEL_CLONE_TRANSCRIPT (1u << 5) /* talkbox_voice_create uses a transcript (in-context cloning) */
#define TALKBOX_MODEL_TEXT_MODES       (1u << 6) /* set_text_mode other than TALKBOX_TEXT_MODE_DEFAULT */
#define TALKBOX_MODEL_FRAME_STREAMING  (1u << 7) /* audio flows frame by frame (otherwise sentence by sentence) */
#define TALKBOX_MODEL_CONVERTS_VOICES  (1u << 8) /* talkbox_voice_convert works (Chatterbox) */
TALKBOX_API unsigned talkbox_model_flags(const talkbox_model* model);

/* The numeric request fields the model takes (talkbox_request_set_number), with their ranges. */
typedef struct talkbox_field {
    size_t struct_size;     /* sizeof(talkbox_field) */
    const char* name;       /* "temperature", "top_k", ... (owned by the model) */
    double min, max;        /* accepted range */
    int min_exclusive;      /* nonzero: the value must be > min (not >=) */
    int integer;            /* nonzero: whole numbers only */
    int has_default;        /* zero: off unless set */
    double default_value;   /* the model's default where has_default */
} talkbox_field;
TALKBOX_API size_t talkbox_model_field_count(const talkbox_model* model);
/* INVALID_ARGUMENT for an index out of range or a NULL. */
TALKBOX_API talkbox_status talkbox_model_field(const talkbox_model* model, size_t index, talkbox_field* out);

/* TALKBOX_OK when the model takes every setting of the request (voice included); otherwise
 * INVALID_ARGUMENT naming the first setting it refuses — what talkbox_session_speak would say. */
TALKBOX_API talkbox_status talkbox_model_check(const talkbox_model* model, const talkbox_request* request);

/* ---- Voices (cloning: TALKBOX_MODEL_CLONES) -------------------------------------------------- */

/* Clones a voice from a reference clip (WAV, FLAC, Ogg, MP3, ...; mixed to mono, resampled).
 * ref_text: the clip's exact transcript for in-context cloning (Qwen3-TTS Base); NULL: from the
 * audio alone (an x-vector for Qwen3-TTS Base; always NULL for Chatterbox). */
TALKBOX_API talkbox_status talkbox_voice_create(const talkbox_model* model, const char* ref_audio_path, const char* ref_text,
                                                talkbox_voice** out);
/* A .voice file (`talkbox voice create`, talkbox_voice_save). */
TALKBOX_API talkbox_status talkbox_voice_load(const char* path, talkbox_voice** out);
/* Writes atomically; replaces an existing file. */
TALKBOX_API talkbox_status talkbox_voice_save(const talkbox_voice* voice, const char* path);
TALKBOX_API void talkbox_voice_free(talkbox_voice* voice);
/* One line for people ("x-vector-only voice for 0.6b models, embedding of 1024 values"); "" for NULL. */
TALKBOX_API const char* talkbox_voice_description(const talkbox_voice* voice);
/* "in_context", "x_vector" (Qwen3-TTS), "audio_prompt" (Chatterbox); "" for NULL. */
TALKBOX_API const char* talkbox_voice_mode(const talkbox_voice* voice);
/* Remarks talkbox_voice_create made on the clip (very short, clipped samples), one per line; "" if none. */
TALKBOX_API const char* talkbox_voice_warnings(const talkbox_voice* voice);

/* Voice conversion (TALKBOX_MODEL_CONVERTS_VOICES; `talkbox vc`): the words of a mono recording of
 * `count` samples at `sample_rate` Hz (at most 60 s) spoken in `voice`'s voice (NULL: the model's
 * built-in one), with S3Gen's noise drawn from `seed`. `watermark` 1: the output carries the Perth
 * watermark, as the official ChatterboxVC's does (without the checkpoint it is unmarked and stderr
 * says so once; see "The watermark"); 0: unmarked. On success *out holds *out_count samples at
 * talkbox_model_sample_rate(), to be released with talkbox_samples_free. UNSUPPORTED for a model that
 * does not convert voices; INVALID_ARGUMENT for a recording too short, too long or not finite, a
 * voice of another model, or a watermark other than 0 or 1. */
TALKBOX_API talkbox_status talkbox_voice_convert(const talkbox_model* model, const float* samples, size_t count, int sample_rate,
                                                 const talkbox_voice* voice, uint64_t seed, int watermark, float** out,
                                                 size_t* out_count);
TALKBOX_API void talkbox_samples_free(float* samples);

/* ---- The Perth watermark (docs/watermark.md) ------------------------------------------------- */

/* What the detector reads from a clip. */
typedef struct talkbox_watermark_result {
    int readable;       /* 0: no frame loud enough to read (silence); the rest is then 0 */
    int detected;       /* 1: the clip carries the watermark (confidence > 0.5) */
    double confidence;  /* the detector's output clipped to [0, 1] (official get_watermark(round=False)) */
    double raw;         /* the detector's output before clipping */
} talkbox_watermark_result;

/* Reads the Perth watermark from `count` mono samples at `sample_rate` Hz. `checkpoint`: a converted
 * Perth checkpoint, NULL for the one `talkbox pull resemble-ai/Perth` fetched (NOT_FOUND when it is
 * absent). INVALID_ARGUMENT for a clip under ~33 ms, a bad rate or samples that are not finite. */
TALKBOX_API talkbox_status talkbox_watermark_detect(const char* checkpoint, const float* samples, size_t count, int sample_rate,
                                                    talkbox_watermark_result* out);
/* Puts the watermark on `count` mono samples (the official apply_watermark): *out holds *out_count
 * samples at the same rate (up to 10 ms fewer), to be released with talkbox_samples_free. Errors as
 * talkbox_watermark_detect. Speech gets it through the request setting "watermark" instead. */
TALKBOX_API talkbox_status talkbox_watermark_embed(const char* checkpoint, const float* samples, size_t count, int sample_rate,
                                                   float** out, size_t* out_count);

/* ---- Requests -------------------------------------------------------------------------------- */

typedef enum talkbox_text_mode {
    TALKBOX_TEXT_MODE_DEFAULT = 0,       /* as the official wrapper */
    TALKBOX_TEXT_MODE_STREAMING = 1,     /* text tokens enter alongside the generated frames */
    TALKBOX_TEXT_MODE_NON_STREAMING = 2  /* the whole text is in the prompt */
} talkbox_text_mode;

/* What to say and how. A request is plain data, not tied to a model: the model checks it when it
 * speaks. It may be reused and changed between calls, never during one. */
TALKBOX_API talkbox_status talkbox_request_new(talkbox_request** out);
TALKBOX_API void talkbox_request_free(talkbox_request* request);

TALKBOX_API talkbox_status talkbox_request_set_text(talkbox_request* request, const char* text);
/* How the text is read: "text" (the default; NULL or "" too) or "ssml", an SSML document
 * (docs/ssml.md: breaks, rates, languages, say-as, sub; <voice name> is one of the model's preset
 * speakers or "builtin"). Malformed SSML fails the speaking call with TALKBOX_ERROR_INVALID_ARGUMENT
 * and a message naming the line and column; what the SSML asks and talkbox does not do (an
 * <audio>, an unknown element) is not reported through this API. */
TALKBOX_API talkbox_status talkbox_request_set_input_format(talkbox_request* request, const char* format);
/* "auto" (the default; NULL or "" too) or one of talkbox_model_language. */
TALKBOX_API talkbox_status talkbox_request_set_language(talkbox_request* request, const char* language);
/* A preset speaker (talkbox_model_speaker); NULL or "" clears it. */
TALKBOX_API talkbox_status talkbox_request_set_speaker(talkbox_request* request, const char* speaker);
/* A style instruction or, for VoiceDesign, the voice's description; NULL or "" clears it. */
TALKBOX_API talkbox_status talkbox_request_set_instructions(talkbox_request* request, const char* instructions);
/* A cloned voice; the request keeps its own reference (the voice may be freed after this). NULL clears it. */
TALKBOX_API talkbox_status talkbox_request_set_voice(talkbox_request* request, const talkbox_voice* voice);
TALKBOX_API talkbox_status talkbox_request_set_text_mode(talkbox_request* request, int mode);
/* The sampling seed: the same request, seed and model give the same samples. Without one a seed is
 * drawn per call and reported in talkbox_result.seed. */
TALKBOX_API talkbox_status talkbox_request_set_seed(talkbox_request* request, uint64_t seed);
TALKBOX_API talkbox_status talkbox_request_clear_seed(talkbox_request* request);
/* Argmax decoding (the repetition penalty still applies). */
TALKBOX_API talkbox_status talkbox_request_set_greedy(talkbox_request* request, int greedy);
/* A numeric setting by its request name (the server's JSON key, the CLI flag without "--"):
 *   model fields (talkbox_model_field): temperature, top_k, top_p, repetition_penalty,
 *     subtalker_temperature, subtalker_top_k, subtalker_top_p, exaggeration, cfg_weight, min_p,
 *     max_frames, min_frames, stall_frames (the loop guard: Qwen3-TTS 24, Chatterbox 50; 0: off), and the settings
 *     of a family's own (a model lists those it takes with talkbox_model_field);
 *   for the text and the stream: split (1: speak the text
 *     sentence by sentence, as `talkbox speak`; 0: as one segment, for Chatterbox one T3
 *     sequence, as `speak --no-split`), segment_chars (200),
 *     pause_ms (300, silence between segments), parallel (0: the model's choice; segments
 *     synthesised at once, the audio identical), watermark (1: put the Perth watermark on the
 *     speech, 0: not; unset: the model's default, on for Chatterbox as its official package does,
 *     nothing marked, with one warning on stderr, without the converted checkpoint),
 *     chunk (4), first_chunk (1).
 * NaN restores the default. An unknown name or a value that is not a number of the right kind
 * gives INVALID_ARGUMENT here; ranges are the model's and are checked when it speaks. */
TALKBOX_API talkbox_status talkbox_request_set_number(talkbox_request* request, const char* name, double value);

/* ---- Sessions and synthesis ------------------------------------------------------------------ */

/* Receives the audio in order while it is generated: `count` mono float samples in [-1, 1] at
 * talkbox_model_sample_rate (the pointer is valid during the call only). Return 0 to continue,
 * nonzero to stop: the callback is not called again, synthesis ends after the current model step,
 * and the speak call returns TALKBOX_CANCELLED. Runs on a library thread or the caller's; it must
 * not call talkbox functions on the same session (talkbox_session_cancel excepted). */
typedef int (*talkbox_audio_callback)(const float* samples, size_t count, void* user_data);

typedef enum talkbox_stop_reason {
    TALKBOX_STOP_EOS = 0,         /* the model ended the speech */
    TALKBOX_STOP_MAX_FRAMES = 1,  /* a segment reached its frame limit */
    TALKBOX_STOP_STALLED = 2,     /* a segment's codes looped (stall_frames) */
    TALKBOX_STOP_CANCELLED = 3
} talkbox_stop_reason;

typedef struct talkbox_result {
    size_t struct_size;       /* sizeof(talkbox_result) */
    size_t samples;           /* samples delivered (pauses between segments included) */
    size_t frames;            /* frames generated (codec frames; Chatterbox: speech tokens) */
    size_t segments;          /* segments spoken */
    size_t segments_cut;      /* of those, how many ended at their frame limit or stalled */
    uint64_t seed;            /* the seed used (given, or drawn) */
    int stop_reason;          /* talkbox_stop_reason of the last segment spoken */
    double first_audio_ms;    /* start → first samples handed to the callback */
    double total_ms;          /* synthesis time */
} talkbox_result;
TALKBOX_API void talkbox_result_init(talkbox_result* result);

TALKBOX_API talkbox_status talkbox_session_new(talkbox_model* model, talkbox_session** out);
/* Must not run while a call on the session is in progress. */
TALKBOX_API void talkbox_session_free(talkbox_session* session);

/* Speaks the request, handing the audio to `callback` as it is made. result (optional) is filled
 * in on TALKBOX_OK and TALKBOX_CANCELLED. An invalid request is refused before any computation. */
TALKBOX_API talkbox_status talkbox_session_speak(talkbox_session* session, const talkbox_request* request,
                                                 talkbox_audio_callback callback, void* user_data, talkbox_result* result);
/* One segment of the text (a sentence, or what segment_chars joins; SSML: also cut where a voice,
 * rate or language changes) and where it lies in the audio the callback received: samples
 * [start, end), the pause after it starting at `end`. Times are per segment, not per word: the
 * models align no words to their audio, while talkbox knows exactly where each segment's samples
 * are (docs/captions.md). The strings are valid during the call only. Fields may be added at the end. */
typedef struct talkbox_segment {
    size_t index;       /* 0-based, in order */
    size_t start, end;  /* samples of the audio handed to the audio callback */
    const char* text;   /* UTF-8, as spoken */
    const char* voice;  /* the segment's voice (an SSML <voice name>, else the request's speaker); NULL: none named */
} talkbox_segment;
/* Called once a segment's audio has all reached the audio callback, on the same thread as it, and
 * not after the audio callback asked to stop or a cancel. */
typedef void (*talkbox_segment_callback)(const talkbox_segment* segment, void* user_data);

/* talkbox_session_speak, with `on_segment` (NULL: none) told each segment's position as it ends:
 * captions, or a reader that highlights the sentence being spoken. */
TALKBOX_API talkbox_status talkbox_session_speak_segments(talkbox_session* session, const talkbox_request* request,
                                                          talkbox_audio_callback callback, talkbox_segment_callback on_segment,
                                                          void* user_data, talkbox_result* result);
/* The same, into an audio file written atomically once synthesis is done (nothing is written when
 * it fails or is cancelled). format: "wav16" (NULL: the default), "wav32", "flac", "ogg", "opus",
 * "mp3", "aac", "raw16", "raw32". */
TALKBOX_API talkbox_status talkbox_session_speak_to_file(talkbox_session* session, const talkbox_request* request,
                                                         const char* path, const char* format, talkbox_result* result);
/* Stops the synthesis running on the session: from then on no audio reaches the callback, and the
 * call returns TALKBOX_CANCELLED after the current model step. Race-free: a cancel that arrives
 * while no call runs stops the next one at once (it is consumed by the call it stops). Any thread. */
TALKBOX_API void talkbox_session_cancel(talkbox_session* session);

/* Writes samples (in [-1, 1]) as an audio file, atomically; format as for speak_to_file.
 * INVALID_ARGUMENT for a sample that is not finite or beyond [-16, 16] (+24 dBFS), or a sample
 * rate outside [1, 768000]: nothing is written. Files written by talkbox (here, speak_to_file,
 * voice_save) are new files of mode 0666 & ~umask or keep the mode of the file they replace; a
 * character device or a FIFO is written in place (a FIFO waits for its reader), and a write error
 * there (a full device) is TALKBOX_ERROR_IO. */
TALKBOX_API talkbox_status talkbox_write_audio(const char* path, const float* samples, size_t count, int sample_rate,
                                               const char* format);

#ifdef __cplusplus
}
#endif

#endif /* TALKBOX_TALKBOX_H */
