"""The Python bindings (bindings/python/talkbox) on the tiny fixture models: the samples equal what
talkbox::Session makes for the same requests (expected/*.f32 from capi_test.cpp, the cases of
capi_cases.h), SSML and its segments (captions), streaming, cancellation, voices, voice conversion
(Chatterbox), files, errors, and the same without NumPy.

    python3 python_bindings_test.py CUSTOMVOICE.gguf BASE.gguf CLIP.wav EXPECTED_DIR TMP_DIR CHATTERBOX.gguf

Run by capi_test (PythonBindings.*) with Debian's /usr/bin/python3 and TALKBOX_LIBRARY set.
"""

import array
import os
import subprocess
import sys
import threading
import unittest
import wave

import numpy as np

import talkbox

CUSTOMVOICE, BASE, CLIP, EXPECTED, TMP, CHATTERBOX = sys.argv[1:7]
# capi_cases.h
TEXT, SEED, MAX_FRAMES = "Hello there.", 42, 12
LONG_TEXT, LONG_PAUSE_MS = "Hello there. How are you today?", 100
LONG_SSML = '<speak>Hello there.<break time="100ms"/>How are you today?</speak>'
CANCEL_MAX_FRAMES = 60


def expected(name):
    return np.fromfile(os.path.join(EXPECTED, name), dtype=np.float32)


class Bindings(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = talkbox.Model(CUSTOMVOICE, threads=2)
        cls.speaker = cls.model.speakers[0]

    def case(self, **extra):
        settings = dict(speaker=self.speaker, seed=SEED, max_frames=MAX_FRAMES, split=0)
        settings.update(extra)
        return settings

    def test_version(self):
        self.assertEqual(talkbox.library_version(), talkbox.__version__)

    def test_capabilities(self):
        m = self.model
        self.assertEqual(m.sample_rate, 24000)
        self.assertEqual(m.architecture, "qwen3tts")
        self.assertEqual(m.family, "Qwen3-TTS")
        self.assertEqual(m.variant, "custom_voice")
        self.assertEqual(m.device, "cpu")
        self.assertIn("CustomVoice", m.description)
        self.assertTrue(m.speakers)
        self.assertTrue(m.languages)
        self.assertTrue(m.flags["takes_instructions"])
        self.assertFalse(m.flags["clones"])
        fields = {f.name: f for f in m.fields}
        self.assertTrue(fields["top_k"].integer)
        self.assertIsNotNone(fields["temperature"].default)

    def test_speak_matches_the_cpp_session(self):
        audio = self.model.speak(TEXT, **self.case())
        self.assertIsInstance(audio, np.ndarray)
        self.assertEqual(audio.dtype, np.float32)
        self.assertTrue(np.array_equal(audio, expected("customvoice.f32")))
        # NumPy scalars are numbers too.
        audio = self.model.speak(TEXT, **self.case(seed=np.uint64(SEED), max_frames=np.int32(MAX_FRAMES)))
        self.assertTrue(np.array_equal(audio, expected("customvoice.f32")))

    def test_long_form_matches(self):
        with self.model.session() as s:
            audio = s.speak(LONG_TEXT, **self.case(split=1, segment_chars=0, pause_ms=LONG_PAUSE_MS))
            self.assertTrue(np.array_equal(audio, expected("long_form.f32")))
            self.assertEqual(s.last_result.segments, 2)
            self.assertEqual(s.last_result.seed, SEED)
            self.assertEqual(s.last_result.samples, audio.size)

    def test_ssml_with_its_segments(self):
        # The long-form case as SSML: its samples, and each segment's place in them to the sample.
        with self.model.session() as s:
            settings = self.case(split=1, segment_chars=0, input_format="ssml")
            audio, segments = s.speak_segments(LONG_SSML, **settings)
            self.assertTrue(np.array_equal(audio, expected("long_form.f32")))
            self.assertEqual([g.text for g in segments], ["Hello there.", "How are you today?"])
            self.assertEqual([g.index for g in segments], [0, 1])
            self.assertEqual([g.voice for g in segments], [self.speaker] * 2)
            self.assertEqual(segments[0].start, 0)
            self.assertEqual(segments[1].start, segments[0].end + 24000 * LONG_PAUSE_MS // 1000)
            self.assertEqual(segments[1].end, audio.size)
            self.assertTrue(np.array_equal(s.speak(LONG_SSML, **settings), audio))
            # Streamed: the same chunks, each segment right after the last of its audio.
            received, streamed = 0, []
            for item in s.stream(LONG_SSML, segments=True, **settings):
                if isinstance(item, talkbox.Segment):
                    self.assertEqual(received, item.end)
                    streamed.append(item)
                else:
                    received += item.size
            self.assertEqual(streamed, segments)
            self.assertEqual(received, audio.size)
            # Without segments=True a stream is chunks only.
            self.assertTrue(all(isinstance(c, np.ndarray) for c in s.stream(LONG_SSML, **settings)))
        # Plain text is the default; the tags are then words.
        self.assertFalse(np.array_equal(self.model.speak(LONG_SSML, **self.case(split=1, segment_chars=0)),
                                        expected("long_form.f32")))
        with self.assertRaises(talkbox.InvalidArgumentError) as e:
            self.model.speak("<speak><s>Hi.</speak>", **self.case(input_format="ssml"))
        self.assertIn("does not match <s> opened at line 1, column 8", str(e.exception))
        with self.assertRaises(talkbox.InvalidArgumentError) as e:
            self.model.speak(TEXT, **self.case(input_format="html"))
        self.assertIn('format must be "text" or "ssml"', str(e.exception))

    def test_voice_conversion(self):
        # One second of a tone at 16 kHz: 25 speech tokens, at most 25 · 960 samples at 24 kHz.
        tone = (0.3 * np.sin(2 * np.pi * 220 * np.arange(16000) / 16000)).astype(np.float32)
        self.assertFalse(self.model.flags["converts_voices"])
        with self.assertRaises(talkbox.UnsupportedError) as e:
            self.model.convert_voice(tone, 16000)
        self.assertIn("does not convert voices", str(e.exception))
        with talkbox.Model(CHATTERBOX, threads=2) as cb:
            self.assertTrue(cb.flags["converts_voices"])
            builtin = cb.convert_voice(tone, 16000, seed=7)
            self.assertEqual(builtin.dtype, np.float32)
            self.assertTrue(24 * 960 < builtin.size <= 25 * 960, builtin.size)
            self.assertTrue(np.array_equal(cb.convert_voice(list(tone), 16000, seed=7), builtin))  # any sequence of samples
            # The tests' environment has no Perth checkpoint: the default (marked) output is the unmarked one.
            self.assertTrue(np.array_equal(cb.convert_voice(tone, 16000, seed=7, watermark=False), builtin))
            voice = cb.create_voice(CLIP)
            cloned = cb.convert_voice(tone, 16000, voice=voice, seed=7)
            self.assertEqual(cloned.size, builtin.size)
            self.assertFalse(np.array_equal(cloned, builtin))
            path = os.path.join(TMP, "cb.voice")
            voice.save(path)
            self.assertTrue(np.array_equal(cb.convert_voice(tone, 16000, voice=path, seed=7), cloned))
            poisoned = tone.copy()
            poisoned[5] = np.nan
            with self.assertRaises(talkbox.InvalidArgumentError) as e:
                cb.convert_voice(poisoned, 16000)
            self.assertIn("the recording holds a non-finite sample at index 5", str(e.exception))
            with self.assertRaises(talkbox.InvalidArgumentError) as e:
                cb.convert_voice(tone[:1000], 16000)
            self.assertIn("voice conversion needs at least 0.2 s", str(e.exception))
            with self.assertRaises(talkbox.InvalidArgumentError):
                cb.convert_voice(tone, 16000, seed=-1)
            with talkbox.Model(BASE, threads=2) as base:
                with self.assertRaises(talkbox.InvalidArgumentError):  # a voice of another model
                    cb.convert_voice(tone, 16000, voice=base.create_voice(CLIP))

    def test_stream_gives_the_same_samples_in_pieces(self):
        chunks = list(self.model.stream(TEXT, **self.case()))
        self.assertGreater(len(chunks), 1)
        self.assertTrue(np.array_equal(np.concatenate(chunks), expected("customvoice.f32")))

    def test_leaving_a_stream_early_stops_it(self):
        with self.model.session() as s:
            long = self.case(max_frames=CANCEL_MAX_FRAMES, min_frames=CANCEL_MAX_FRAMES, stall_frames=0)
            for chunk in s.stream(TEXT, **long):
                break
            self.assertEqual(s.last_result, None)
            # The session is free again and speaks the case exactly.
            self.assertTrue(np.array_equal(s.speak(TEXT, **self.case()), expected("customvoice.f32")))

    def test_cancel_from_another_thread(self):
        with self.model.session() as s:
            long = self.case(max_frames=CANCEL_MAX_FRAMES, min_frames=CANCEL_MAX_FRAMES, stall_frames=0)
            full = s.speak(TEXT, **long)
            got = []
            for chunk in s.stream(TEXT, queue_chunks=1, **long):
                got.append(chunk)
                if len(got) == 1:
                    t = threading.Thread(target=s.cancel)
                    t.start()
                    t.join()
            self.assertEqual(s.last_result.stop_reason, "cancelled")
            self.assertLess(sum(len(c) for c in got), full.size)
            # speak() raises instead.
            s.cancel()
            with self.assertRaises(talkbox.CancelledError) as e:
                s.speak(TEXT, **self.case())
            self.assertIn("cancelled by talkbox_session_cancel", str(e.exception))

    def test_speak_to_wav(self):
        path = os.path.join(TMP, "py.wav")
        result = self.model.speak_to_wav(path, TEXT, **self.case())
        want = expected("customvoice.f32")
        self.assertEqual(result.samples, want.size)
        with wave.open(path, "rb") as w:
            self.assertEqual((w.getnchannels(), w.getsampwidth(), w.getframerate()), (1, 2, 24000))
            pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
        # audio::to_pcm16: clamp, scale in float32, round half away from zero (std::lround).
        scaled = (np.clip(want, -1, 1) * np.float32(32767)).astype(np.float64)
        self.assertTrue(np.array_equal(pcm, (np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)).astype("<i2")))
        talkbox.write_wav(os.path.join(TMP, "py2.wav"), want)
        with wave.open(os.path.join(TMP, "py2.wav"), "rb") as w:
            self.assertEqual(w.getnframes(), want.size)

    def test_errors(self):
        with self.assertRaises(talkbox.NotFoundError) as e:
            talkbox.Model("/nonexistent/model.gguf")
        self.assertIn("/nonexistent/model.gguf", str(e.exception))
        with self.assertRaises(talkbox.NotFoundError) as e:
            talkbox.Model(CUSTOMVOICE, device="cuda:3")
        self.assertIn("device 'cuda:3' is not available", str(e.exception))
        with self.assertRaises(talkbox.InvalidArgumentError) as e:
            talkbox.Model(CUSTOMVOICE, decoder_precision="bf16")
        self.assertIn("decoder precision 'bf16' is not one of f32, int8", str(e.exception))
        with self.assertRaises(talkbox.InvalidArgumentError) as e:
            self.model.speak(TEXT, speaker="nobody")
        self.assertIn("unknown speaker 'nobody'", str(e.exception))
        self.assertIsInstance(e.exception, ValueError)
        with self.assertRaises(talkbox.InvalidArgumentError) as e:
            self.model.speak(TEXT, **self.case(temprature=0.5))
        self.assertIn("unknown request setting 'temprature'", str(e.exception))
        with self.assertRaises(talkbox.InvalidArgumentError) as e:
            self.model.speak(TEXT, **self.case(top_p=2))
        self.assertIn("top_p must be in (0, 1]", str(e.exception))
        with self.assertRaises(talkbox.InvalidArgumentError):
            self.model.check(speaker=self.speaker, exaggeration=0.5)
        with self.assertRaises(talkbox.InvalidArgumentError) as e:
            self.model.speak("  ", speaker=self.speaker)
        self.assertIn("the text to speak is empty", str(e.exception))
        with self.assertRaises(talkbox.UnsupportedError):
            self.model.create_voice(CLIP)
        with self.assertRaises(talkbox.InvalidArgumentError):
            self.model.speak(TEXT, seed=-1)
        with self.assertRaises(TypeError):
            self.model.speak(42)

    def test_base_voice_matches(self):
        with talkbox.Model(BASE, threads=2) as base:
            self.assertTrue(base.flags["clones"] and base.flags["needs_voice"])
            with self.assertRaises(talkbox.InvalidArgumentError) as e:
                base.speak(TEXT, seed=SEED)
            self.assertIn("needs a voice", str(e.exception))
            voice = base.create_voice(CLIP)
            self.assertEqual(voice.mode, "x_vector")
            audio = base.speak(TEXT, voice=voice, seed=SEED, max_frames=MAX_FRAMES)
            self.assertTrue(np.array_equal(audio, expected("base.f32")))
            path = os.path.join(TMP, "py.voice")
            voice.save(path)
            self.assertTrue(np.array_equal(base.speak(TEXT, voice=path, seed=SEED, max_frames=MAX_FRAMES),
                                           expected("base.f32")))

    def test_a_missing_library_is_named(self):
        env = dict(os.environ, TALKBOX_LIBRARY="/nonexistent/libtalkbox.so")
        out = subprocess.run([sys.executable, "-c", "import talkbox; talkbox.Model(%r)" % CUSTOMVOICE], env=env,
                             capture_output=True, text=True)
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("cannot load libtalkbox ('/nonexistent/libtalkbox.so')", out.stderr)

    def test_without_numpy(self):
        # The same module with NumPy hidden: array.array('f') in and out.
        code = ("import sys; sys.modules['numpy'] = None\n"
                "import array, talkbox\n"
                "m = talkbox.Model(sys.argv[1], threads=2)\n"
                "a = m.speak('%s', speaker=m.speakers[0], seed=%d, max_frames=%d, split=0)\n"
                "assert isinstance(a, array.array) and a.typecode == 'f', type(a)\n"
                "want = array.array('f'); want.frombytes(open(sys.argv[2], 'rb').read())\n"
                "assert a == want, (len(a), len(want))\n"
                "talkbox.write_wav(sys.argv[3], a)\n"
                "print('no-numpy ok')\n") % (TEXT, SEED, MAX_FRAMES)
        out = subprocess.run([sys.executable, "-c", code, CUSTOMVOICE, os.path.join(EXPECTED, "customvoice.f32"),
                              os.path.join(TMP, "nonumpy.wav")], capture_output=True, text=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("no-numpy ok", out.stdout)


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0], "-v"])
