/* The requests that the C API test (capi_c_test.c), the Python test (python_bindings_test.py,
 * which repeats them) and their C++ driver (capi_test.cpp, which makes the expected samples with
 * talkbox::Session) share, so that all of them speak exactly the same thing. */
#ifndef TALKBOX_TESTS_CAPI_CASES_H
#define TALKBOX_TESTS_CAPI_CASES_H

/* One segment with the model's first preset speaker: expected/customvoice.f32 */
#define CASE_TEXT "Hello there."
#define CASE_SEED 42u
#define CASE_MAX_FRAMES 12
/* Two sentences, one segment each (segment_chars 0), 100 ms apart: expected/long_form.f32 */
#define CASE_LONG_TEXT "Hello there. How are you today?"
#define CASE_LONG_PAUSE_MS 100
/* The same two sentences as SSML, a 100 ms <break> between them: expected/long_form.f32 again */
#define CASE_LONG_SSML "<speak>Hello there.<break time=\"100ms\"/>How are you today?</speak>"
/* Base with an x-vector voice cloned from the fixture clip: expected/base.f32 */
/* Chatterbox multilingual with its built-in voice: expected/chatterbox.f32 */
#define CASE_CHATTERBOX_MAX_FRAMES 8
/* Long enough to be cancelled mid-way (the stall guard off so that it runs its course). */
#define CASE_CANCEL_MAX_FRAMES 60

#endif
