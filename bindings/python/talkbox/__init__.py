"""talkbox for Python: text-to-speech with Qwen3-TTS and Chatterbox GGUF models.

A ctypes binding of libtalkbox.so (include/talkbox/talkbox.h); nothing is compiled. Audio comes
back as a float32 NumPy array when NumPy is installed, otherwise as an ``array.array('f')``.

    import talkbox
    model = talkbox.Model("customvoice.gguf")
    audio = model.speak("Hello!", speaker=model.speakers[0], seed=42)
    talkbox.write_wav("hello.wav", audio, model.sample_rate)

    session = model.session()                 # one synthesis at a time; cheap
    for chunk in session.stream("A long text. Sentence by sentence."):
        play(chunk)                           # while the rest is being generated
    session.cancel()                          # from any thread

    audio, segments = session.speak_segments("<speak><s>One.</s><s>Two.</s></speak>", input_format="ssml")
    for seg in segments:                      # captions: each segment's text and samples [start, end)
        print(seg.text, seg.start / model.sample_rate, seg.end / model.sample_rate)

    vc = talkbox.Model("chatterbox.gguf")      # voice conversion (models with flags["converts_voices"])
    converted = vc.convert_voice(recording, 16000, voice=talkbox.Voice.load("anna.voice"))

The library is found through $TALKBOX_LIBRARY, then next to this package, then the system's
library path (an installed libtalkbox). See docs/c-api.md.
"""

import array
import ctypes
import ctypes.util
import numbers
import os
import queue
import threading
from collections import namedtuple

try:
    import numpy as _np
except ImportError:  # the bindings work without NumPy (array.array('f') instead)
    _np = None

__all__ = [
    "Model", "Session", "Voice", "Result", "Field", "Segment", "write_wav", "write_audio", "library_version",
    "TalkboxError", "InvalidArgumentError", "NotFoundError", "FormatError", "IoError", "UnsupportedError",
    "CancelledError", "ExistsError", "InternalError",
]

# ---- Errors ---------------------------------------------------------------------------------------


class TalkboxError(Exception):
    """A call into libtalkbox failed: ``status`` is the talkbox_status, the message says why."""

    status = None
    status_name = "error"


class InvalidArgumentError(TalkboxError, ValueError):
    status, status_name = 1, "invalid_argument"


class NotFoundError(TalkboxError):
    status, status_name = 2, "not_found"


class FormatError(TalkboxError):
    status, status_name = 3, "format"


class IoError(TalkboxError):
    status, status_name = 4, "io"


class UnsupportedError(TalkboxError):
    status, status_name = 5, "unsupported"


class CancelledError(TalkboxError):
    status, status_name = 6, "cancelled"


class ExistsError(TalkboxError):
    status, status_name = 7, "exists"


class InternalError(TalkboxError):
    status, status_name = 8, "internal"


class OutOfMemoryError(TalkboxError, MemoryError):
    status, status_name = 9, "out_of_memory"


_ERRORS = {c.status: c for c in (InvalidArgumentError, NotFoundError, FormatError, IoError, UnsupportedError,
                                  CancelledError, ExistsError, InternalError, OutOfMemoryError)}

# ---- The library ----------------------------------------------------------------------------------


def _find_library():
    env = os.environ.get("TALKBOX_LIBRARY")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.path.join(here, "libtalkbox.so"), os.path.join(os.path.dirname(here), "libtalkbox.so")):
        if os.path.exists(candidate):
            return candidate
    return ctypes.util.find_library("talkbox") or "libtalkbox.so"


_lib = None
_lib_lock = threading.Lock()


class _ModelOptions(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("threads", ctypes.c_int), ("decoder_threads", ctypes.c_int),
                ("gpu", ctypes.c_int), ("kv_cache", ctypes.c_char_p), ("device", ctypes.c_char_p),
                ("decoder_precision", ctypes.c_char_p)]


class _Field(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("name", ctypes.c_char_p), ("min", ctypes.c_double),
                ("max", ctypes.c_double), ("min_exclusive", ctypes.c_int), ("integer", ctypes.c_int),
                ("has_default", ctypes.c_int), ("default_value", ctypes.c_double)]


class _Result(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_size_t), ("samples", ctypes.c_size_t), ("frames", ctypes.c_size_t),
                ("segments", ctypes.c_size_t), ("segments_cut", ctypes.c_size_t), ("seed", ctypes.c_uint64),
                ("stop_reason", ctypes.c_int), ("first_audio_ms", ctypes.c_double), ("total_ms", ctypes.c_double)]


class _Segment(ctypes.Structure):
    _fields_ = [("index", ctypes.c_size_t), ("start", ctypes.c_size_t), ("end", ctypes.c_size_t), ("text", ctypes.c_char_p),
                ("voice", ctypes.c_char_p)]


_AUDIO_CALLBACK = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(ctypes.c_float), ctypes.c_size_t, ctypes.c_void_p)
_SEGMENT_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Segment), ctypes.c_void_p)
_P = ctypes.c_void_p


def _load():
    global _lib
    with _lib_lock:
        if _lib is not None:
            return _lib
        path = _find_library()
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:
            raise OSError("cannot load libtalkbox ('%s'): %s; set TALKBOX_LIBRARY to the path of libtalkbox.so" % (path, e))
        status, s, i, d, u, z = ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_double, ctypes.c_uint, ctypes.c_size_t
        pp = ctypes.POINTER(ctypes.c_void_p)
        pf = ctypes.POINTER(ctypes.c_float)
        signatures = {
            "talkbox_version": (s, []),
            "talkbox_version_number": (i, []),
            "talkbox_status_name": (s, [i]),
            "talkbox_last_error": (s, []),
            "talkbox_model_options_init": (None, [ctypes.POINTER(_ModelOptions)]),
            "talkbox_model_load": (status, [s, ctypes.POINTER(_ModelOptions), pp]),
            "talkbox_model_free": (None, [_P]),
            "talkbox_model_sample_rate": (i, [_P]),
            "talkbox_model_frames_per_second": (d, [_P]),
            "talkbox_model_description": (s, [_P]),
            "talkbox_model_family": (s, [_P]),
            "talkbox_model_architecture": (s, [_P]),
            "talkbox_model_variant": (s, [_P]),
            "talkbox_model_size": (s, [_P]),
            "talkbox_model_device": (s, [_P]),
            "talkbox_model_speaker_count": (z, [_P]),
            "talkbox_model_speaker": (s, [_P, z]),
            "talkbox_model_language_count": (z, [_P]),
            "talkbox_model_language": (s, [_P, z]),
            "talkbox_model_flags": (u, [_P]),
            "talkbox_model_field_count": (z, [_P]),
            "talkbox_model_field": (status, [_P, z, ctypes.POINTER(_Field)]),
            "talkbox_model_check": (status, [_P, _P]),
            "talkbox_voice_create": (status, [_P, s, s, pp]),
            "talkbox_voice_load": (status, [s, pp]),
            "talkbox_voice_save": (status, [_P, s]),
            "talkbox_voice_free": (None, [_P]),
            "talkbox_voice_description": (s, [_P]),
            "talkbox_voice_mode": (s, [_P]),
            "talkbox_voice_warnings": (s, [_P]),
            "talkbox_voice_convert": (status, [_P, pf, z, i, _P, ctypes.c_uint64, i, ctypes.POINTER(pf), ctypes.POINTER(z)]),
            "talkbox_samples_free": (None, [pf]),
            "talkbox_request_new": (status, [pp]),
            "talkbox_request_free": (None, [_P]),
            "talkbox_request_set_text": (status, [_P, s]),
            "talkbox_request_set_input_format": (status, [_P, s]),
            "talkbox_request_set_language": (status, [_P, s]),
            "talkbox_request_set_speaker": (status, [_P, s]),
            "talkbox_request_set_instructions": (status, [_P, s]),
            "talkbox_request_set_voice": (status, [_P, _P]),
            "talkbox_request_set_text_mode": (status, [_P, i]),
            "talkbox_request_set_seed": (status, [_P, ctypes.c_uint64]),
            "talkbox_request_clear_seed": (status, [_P]),
            "talkbox_request_set_greedy": (status, [_P, i]),
            "talkbox_request_set_number": (status, [_P, s, d]),
            "talkbox_result_init": (None, [ctypes.POINTER(_Result)]),
            "talkbox_session_new": (status, [_P, pp]),
            "talkbox_session_free": (None, [_P]),
            "talkbox_session_speak": (status, [_P, _P, _AUDIO_CALLBACK, _P, ctypes.POINTER(_Result)]),
            "talkbox_session_speak_segments": (status, [_P, _P, _AUDIO_CALLBACK, _SEGMENT_CALLBACK, _P, ctypes.POINTER(_Result)]),
            "talkbox_session_speak_to_file": (status, [_P, _P, s, s, ctypes.POINTER(_Result)]),
            "talkbox_session_cancel": (None, [_P]),
            "talkbox_write_audio": (status, [s, ctypes.POINTER(ctypes.c_float), z, i, s]),
        }
        for name, (restype, argtypes) in signatures.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                raise OSError("'%s' is not a libtalkbox this module can use (it lacks %s; the module is %s)"
                              % (path, name, __version__))
            fn.restype, fn.argtypes = restype, argtypes
        _lib = lib
        return lib


def _text(b):
    return b.decode("utf-8") if b is not None else None


def _bytes(s, what):
    if s is None:
        return None
    if isinstance(s, os.PathLike):
        s = os.fspath(s)
    if isinstance(s, bytes):
        return s
    if not isinstance(s, str):
        raise TypeError("%s must be a str, got %s" % (what, type(s).__name__))
    return s.encode("utf-8")


def _check(status):
    if status != 0:
        lib = _load()
        message = _text(lib.talkbox_last_error()) or _text(lib.talkbox_status_name(status))
        raise _ERRORS.get(status, TalkboxError)(message)


def library_version():
    """The loaded libtalkbox's version, "0.1.0"."""
    return _text(_load().talkbox_version())


__version__ = "0.1.0"

# ---- Audio containers ----------------------------------------------------------------------------


def _samples_from(pointer, count):
    if _np is not None:
        return _np.ctypeslib.as_array(pointer, shape=(count,)).copy() if count else _np.zeros(0, dtype=_np.float32)
    out = array.array("f")
    out.frombytes(ctypes.string_at(pointer, count * 4))
    return out


def _join(chunks):
    if _np is not None:
        return _np.concatenate(chunks) if chunks else _np.zeros(0, dtype=_np.float32)
    out = array.array("f")
    for c in chunks:
        out.extend(c)
    return out


def _as_float_buffer(samples):
    """(ctypes pointer, count, keep-alive) for a float32 NumPy array, array.array('f') or sequence."""
    if _np is not None and isinstance(samples, _np.ndarray):
        a = _np.ascontiguousarray(samples, dtype=_np.float32).reshape(-1)
        return a.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), a.size, a
    if not (isinstance(samples, array.array) and samples.typecode == "f"):
        samples = array.array("f", samples)
    buf = (ctypes.c_float * len(samples)).from_buffer(samples) if len(samples) else None
    return ctypes.cast(buf, ctypes.POINTER(ctypes.c_float)) if buf is not None else None, len(samples), (samples, buf)


def write_audio(path, samples, sample_rate, format="wav16"):
    """Writes mono samples in [-1, 1] to an audio file atomically (wav16, wav32, flac, ogg, opus, mp3, aac, raw16, raw32)."""
    pointer, count, keep = _as_float_buffer(samples)
    _check(_load().talkbox_write_audio(_bytes(path, "path"), pointer, count, int(sample_rate), _bytes(format, "format")))
    del keep


def write_wav(path, samples, sample_rate=24000):
    """Writes a 16-bit WAV file."""
    write_audio(path, samples, sample_rate, "wav16")


# ---- Models, voices, sessions -------------------------------------------------------------------

Result = namedtuple("Result", "samples frames segments segments_cut seed stop_reason first_audio_ms total_ms")
Field = namedtuple("Field", "name min max min_exclusive integer default")
# One segment of the text (a sentence; SSML: also cut where a voice, rate or language changes) and
# its samples [start, end) in the audio, the pause after it starting at `end` (docs/captions.md).
# voice: the SSML <voice name> or the request's speaker; None when none is named.
Segment = namedtuple("Segment", "index start end text voice")
_STOP_REASONS = {0: "eos", 1: "max_frames", 2: "stalled", 3: "cancelled"}
_TEXT_MODES = {None: 0, "default": 0, "streaming": 1, "non_streaming": 2}

_FLAGS = {"designs_voice": 1 << 0, "takes_instructions": 1 << 1, "clones": 1 << 2, "needs_voice": 1 << 3,
          "builtin_voice": 1 << 4, "clone_transcript": 1 << 5, "text_modes": 1 << 6, "frame_streaming": 1 << 7,
          "converts_voices": 1 << 8}


class _Handle:
    _free = None

    def __init__(self, handle):
        self._handle = handle

    def close(self):
        """Frees the object now (otherwise when it is garbage-collected)."""
        h, self._handle = getattr(self, "_handle", None), None
        if h and _lib is not None:
            getattr(_lib, self._free)(h)

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _h(self):
        if not self._handle:
            raise ValueError("%s is closed" % type(self).__name__)
        return self._handle


class Voice(_Handle):
    """A cloned voice: from Model.create_voice or a .voice file (Voice.load, `talkbox voice create`)."""

    _free = "talkbox_voice_free"

    @classmethod
    def load(cls, path):
        h = ctypes.c_void_p()
        _check(_load().talkbox_voice_load(_bytes(path, "path"), ctypes.byref(h)))
        return cls(h.value)

    def save(self, path):
        _check(_lib.talkbox_voice_save(self._h(), _bytes(path, "path")))

    @property
    def mode(self):
        """"in_context", "x_vector" (Qwen3-TTS) or "audio_prompt" (Chatterbox)."""
        return _text(_lib.talkbox_voice_mode(self._h()))

    @property
    def description(self):
        return _text(_lib.talkbox_voice_description(self._h()))

    @property
    def warnings(self):
        """Remarks on the reference clip (very short, clipped samples)."""
        w = _text(_lib.talkbox_voice_warnings(self._h()))
        return w.split("\n") if w else []

    def __repr__(self):
        return "talkbox.Voice(%r)" % (self.description if self._handle else "closed")


class Model(_Handle):
    """A loaded model: weights in memory once, shared by every Session and thread."""

    _free = "talkbox_model_free"

    def __init__(self, path, threads=0, decoder_threads=0, gpu=False, kv_cache=None, device=None, decoder_precision=None):
        lib = _load()
        o = _ModelOptions()
        lib.talkbox_model_options_init(ctypes.byref(o))
        o.threads, o.decoder_threads, o.gpu = int(threads), int(decoder_threads), 1 if gpu else 0
        o.kv_cache = _bytes(kv_cache, "kv_cache")
        o.device = _bytes(device, "device")
        o.decoder_precision = _bytes(decoder_precision, "decoder_precision")
        h = ctypes.c_void_p()
        _check(lib.talkbox_model_load(_bytes(path, "path"), ctypes.byref(o), ctypes.byref(h)))
        super().__init__(h.value)
        self.path = os.fspath(path)

    sample_rate = property(lambda self: _lib.talkbox_model_sample_rate(self._h()))
    frames_per_second = property(lambda self: _lib.talkbox_model_frames_per_second(self._h()))
    description = property(lambda self: _text(_lib.talkbox_model_description(self._h())))
    family = property(lambda self: _text(_lib.talkbox_model_family(self._h())))  # "Qwen3-TTS", "Chatterbox"
    architecture = property(lambda self: _text(_lib.talkbox_model_architecture(self._h())))  # "qwen3tts", "chatterbox"
    variant = property(lambda self: _text(_lib.talkbox_model_variant(self._h())))
    size = property(lambda self: _text(_lib.talkbox_model_size(self._h())))
    device = property(lambda self: _text(_lib.talkbox_model_device(self._h())))

    @property
    def speakers(self):
        h = self._h()
        return [_text(_lib.talkbox_model_speaker(h, i)) for i in range(_lib.talkbox_model_speaker_count(h))]

    @property
    def languages(self):
        """Languages besides "auto"."""
        h = self._h()
        return [_text(_lib.talkbox_model_language(h, i)) for i in range(_lib.talkbox_model_language_count(h))]

    @property
    def flags(self):
        """The model's capabilities by name: {"clones": False, "needs_voice": False, ...}."""
        bits = _lib.talkbox_model_flags(self._h())
        return {name: bool(bits & bit) for name, bit in _FLAGS.items()}

    @property
    def fields(self):
        """The numeric settings the model takes (keyword arguments of speak), with ranges and defaults."""
        h, out = self._h(), []
        for i in range(_lib.talkbox_model_field_count(h)):
            f = _Field()
            f.struct_size = ctypes.sizeof(f)
            _check(_lib.talkbox_model_field(h, i, ctypes.byref(f)))
            out.append(Field(_text(f.name), f.min, f.max, bool(f.min_exclusive), bool(f.integer),
                             f.default_value if f.has_default else None))
        return out

    def session(self):
        return Session(self)

    def create_voice(self, audio_path, ref_text=None):
        """Clones a voice from a clip; ref_text (its exact transcript) for in-context cloning."""
        h = ctypes.c_void_p()
        _check(_lib.talkbox_voice_create(self._h(), _bytes(audio_path, "audio_path"), _bytes(ref_text, "ref_text"),
                                         ctypes.byref(h)))
        return Voice(h.value)

    def convert_voice(self, samples, sample_rate, voice=None, seed=0, watermark=True):
        """Voice conversion (flags["converts_voices"]: Chatterbox): the words of a mono recording
        (float32 NumPy array, array.array('f') or sequence of samples in [-1, 1] at `sample_rate`
        Hz, at most 60 s) spoken in `voice` (a Voice or a .voice path; None: the model's built-in
        voice), S3Gen's noise drawn from `seed`, with the Perth watermark unless `watermark` is
        False (as the official ChatterboxVC; needs its checkpoint, docs/watermark.md). Returns
        samples at model.sample_rate. Raises
        UnsupportedError for a model that does not convert voices, InvalidArgumentError for a
        recording too short, too long or not finite, or a voice of another model."""
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2 ** 64:
            raise InvalidArgumentError("seed must be an integer in [0, 2**64), got %r" % (seed,))
        if isinstance(sample_rate, bool) or not isinstance(sample_rate, numbers.Integral):
            raise InvalidArgumentError("sample_rate must be an integer, got %r" % (sample_rate,))
        target = voice if isinstance(voice, Voice) or voice is None else Voice.load(voice)
        pointer, count, keep = _as_float_buffer(samples)
        out, out_count = ctypes.POINTER(ctypes.c_float)(), ctypes.c_size_t()
        _check(_lib.talkbox_voice_convert(self._h(), pointer, count, int(sample_rate), target._h() if target else None, int(seed),
                                          1 if watermark else 0, ctypes.byref(out), ctypes.byref(out_count)))
        del keep
        try:
            return _samples_from(out, out_count.value)
        finally:
            _lib.talkbox_samples_free(out)

    def check(self, text="-", **settings):
        """Raises InvalidArgumentError if the model would refuse these settings (see speak)."""
        with _Request(text, settings) as r:
            _check(_lib.talkbox_model_check(self._h(), r.handle))

    def speak(self, text, **settings):
        """Text → samples (on a session of its own); see Session.speak."""
        with Session(self) as s:
            return s.speak(text, **settings)

    def stream(self, text, **settings):
        """Text → chunks of samples while they are generated; see Session.stream."""
        with Session(self) as s:
            yield from s.stream(text, **settings)

    def speak_segments(self, text, **settings):
        """Text → (samples, [Segment, ...]); see Session.speak_segments."""
        with Session(self) as s:
            return s.speak_segments(text, **settings)

    def speak_to_file(self, path, text, format="wav16", **settings):
        with Session(self) as s:
            return s.speak_to_file(path, text, format=format, **settings)

    speak_to_wav = speak_to_file

    def __repr__(self):
        return "talkbox.Model(%r)" % (self.description if self._handle else "closed")


class _Request:
    """A talkbox_request built from speak()'s keyword arguments."""

    def __init__(self, text, settings):
        h = ctypes.c_void_p()
        _check(_load().talkbox_request_new(ctypes.byref(h)))
        self.handle = h.value
        try:
            self._fill(text, dict(settings))
        except BaseException:
            self.close()
            raise

    def _fill(self, text, s):
        lib, h = _lib, self.handle
        _check(lib.talkbox_request_set_text(h, _bytes(text, "text")))
        _check(lib.talkbox_request_set_input_format(h, _bytes(s.pop("input_format", None), "input_format")))
        for key, fn in (("speaker", lib.talkbox_request_set_speaker), ("language", lib.talkbox_request_set_language),
                        ("instructions", lib.talkbox_request_set_instructions)):
            value = s.pop(key, None)
            if value is not None:
                _check(fn(h, _bytes(value, key)))
        voice = s.pop("voice", None)
        if voice is not None:
            self.voice = voice if isinstance(voice, Voice) else Voice.load(voice)
            _check(lib.talkbox_request_set_voice(h, self.voice._h()))
        mode = s.pop("text_mode", None)
        if mode not in _TEXT_MODES:
            raise InvalidArgumentError("text_mode must be one of 'default', 'streaming', 'non_streaming', got %r" % (mode,))
        _check(lib.talkbox_request_set_text_mode(h, _TEXT_MODES[mode]))
        seed = s.pop("seed", None)
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or not 0 <= seed < 2 ** 64:
                raise InvalidArgumentError("seed must be an integer in [0, 2**64), got %r" % (seed,))
            _check(lib.talkbox_request_set_seed(h, int(seed)))
        _check(lib.talkbox_request_set_greedy(h, 1 if s.pop("greedy", False) else 0))
        for name, value in s.items():  # every other setting by its request name (talkbox_request_set_number)
            if value is None:
                continue
            if isinstance(value, bool):
                value = int(value)
            if not isinstance(value, numbers.Real):  # NumPy scalars too
                raise InvalidArgumentError("%s must be a number, got %r" % (name, value))
            _check(lib.talkbox_request_set_number(h, _bytes(name, "setting"), float(value)))

    def close(self):
        h, self.handle = self.handle, None
        if h:
            _lib.talkbox_request_free(h)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _segment(seg):
    return Segment(seg.index, seg.start, seg.end, _text(seg.text), _text(seg.voice))


def _result(r):
    return Result(r.samples, r.frames, r.segments, r.segments_cut, r.seed, _STOP_REASONS.get(r.stop_reason, "eos"),
                  r.first_audio_ms, r.total_ms)


class Session(_Handle):
    """One synthesis at a time on a model (its caches and sampler). Cheap to create.

    Settings (keyword arguments of speak, stream and speak_to_file): input_format ('text', the
    default, or 'ssml': the text is an SSML document, docs/ssml.md), speaker, language,
    instructions, voice (a Voice or a .voice path), seed, greedy, text_mode ('default',
    'streaming', 'non_streaming'), and the numeric request names of talkbox_request_set_number:
    temperature, top_k, top_p, repetition_penalty, subtalker_*, exaggeration, cfg_weight, min_p,
    max_frames, min_frames, stall_frames, split, segment_chars, pause_ms, parallel, chunk, first_chunk.
    """

    _free = "talkbox_session_free"

    def __init__(self, model):
        h = ctypes.c_void_p()
        _check(_load().talkbox_session_new(model._h(), ctypes.byref(h)))
        super().__init__(h.value)
        self.model = model
        self.sample_rate = model.sample_rate
        self.last_result = None  # the Result of the last speak/stream/speak_to_file

    def cancel(self):
        """Stops the running synthesis (any thread): it raises CancelledError (stream() just ends)."""
        if self._handle:
            _lib.talkbox_session_cancel(self._handle)

    def stream(self, text, queue_chunks=64, segments=False, **settings):
        """Yields chunks of samples while they are generated; with segments=True also each Segment
        (captions) right after the last chunk of its audio. Closing the generator (break) stops
        synthesis; Session.cancel() from another thread ends it early without an error."""
        request = _Request(text, settings)
        chunks = queue.Queue(maxsize=queue_chunks)  # back-pressure: the library waits for a slow consumer
        stop = threading.Event()
        outcome = {}
        done = object()

        def put(item):  # False once the consumer has left
            while not stop.is_set():
                try:
                    chunks.put(item, timeout=0.1)
                    return True
                except queue.Full:
                    pass
            return False

        def on_audio(pcm, n, user):
            try:
                return 0 if not stop.is_set() and put(_samples_from(pcm, n)) else 1
            except BaseException as e:  # never into C: keep it for the consumer
                outcome["error"] = e
                return 1

        def on_segment(seg, user):
            try:
                put(_segment(seg.contents))
            except BaseException as e:
                outcome["error"] = e

        callback = _AUDIO_CALLBACK(on_audio)
        segment_callback = _SEGMENT_CALLBACK(on_segment) if segments else _SEGMENT_CALLBACK()
        handle = self._h()

        def run():
            r = _Result()
            _lib.talkbox_result_init(ctypes.byref(r))
            try:
                status = _lib.talkbox_session_speak_segments(handle, request.handle, callback, segment_callback, None,
                                                             ctypes.byref(r))
                outcome["status"] = status
                outcome["message"] = _text(_lib.talkbox_last_error())
                outcome["result"] = _result(r)
            finally:
                while True:  # the end marker must get through even to a consumer that stopped reading
                    try:
                        chunks.put(done, timeout=0.1)
                        break
                    except queue.Full:
                        if stop.is_set():
                            try:
                                chunks.get_nowait()
                            except queue.Empty:
                                pass

        worker = threading.Thread(target=run, name="talkbox-speak", daemon=True)
        worker.start()
        try:
            while True:
                try:
                    chunk = chunks.get(timeout=0.1)  # a timeout keeps Ctrl-C working
                except queue.Empty:
                    continue
                if chunk is done:
                    break
                yield chunk
            if "error" in outcome:
                raise outcome["error"]
            self.last_result = outcome.get("result")
            status = outcome.get("status", 0)
            if status == CancelledError.status:
                return  # Session.cancel(): the stream just ends
            if status != 0:
                raise _ERRORS.get(status, TalkboxError)(outcome.get("message"))
        finally:
            stop.set()  # the consumer left early (break, an exception, Ctrl-C): stop synthesis
            worker.join()
            request.close()
            del callback, segment_callback

    def speak(self, text, **settings):
        """Text → all samples (float32 NumPy array, or array.array('f') without NumPy). Raises
        CancelledError when Session.cancel() stopped it."""
        with _Request(text, settings) as request:
            return self._speak_collect(request, [])

    def speak_segments(self, text, **settings):
        """Text → (samples, [Segment, ...]): the audio as speak() makes it, and where each segment
        of the text lies in it (captions, docs/captions.md)."""
        segments = []
        with _Request(text, settings) as request:
            return self._speak_collect(request, [], segments), segments

    def _speak_collect(self, request, chunks, segments=None):
        # Through stream()'s machinery so that the caller's thread stays interruptible (Ctrl-C).
        error = {}

        def on_audio(pcm, n, user):
            try:
                chunks.append(_samples_from(pcm, n))
                return 0
            except BaseException as e:
                error["e"] = e
                return 1

        def on_segment(seg, user):
            try:
                segments.append(_segment(seg.contents))
            except BaseException as e:  # never into C
                error.setdefault("e", e)

        callback = _AUDIO_CALLBACK(on_audio)
        segment_callback = _SEGMENT_CALLBACK(on_segment) if segments is not None else _SEGMENT_CALLBACK()
        r = _Result()
        _lib.talkbox_result_init(ctypes.byref(r))
        handle = self._h()
        outcome = {}

        def run():
            outcome["status"] = _lib.talkbox_session_speak_segments(handle, request.handle, callback, segment_callback, None,
                                                                    ctypes.byref(r))
            outcome["message"] = _text(_lib.talkbox_last_error())

        worker = threading.Thread(target=run, name="talkbox-speak", daemon=True)
        worker.start()
        try:
            while worker.is_alive():
                worker.join(0.1)
        except BaseException:
            self.cancel()  # Ctrl-C: stop synthesis, then let it finish
            worker.join()
            raise
        if "e" in error:
            raise error["e"]
        self.last_result = _result(r)
        _check_message(outcome["status"], outcome["message"])
        return _join(chunks)

    def speak_to_file(self, path, text, format="wav16", **settings):
        """Speaks into an audio file (written atomically when done); returns the Result."""
        with _Request(text, settings) as request:
            r = _Result()
            _lib.talkbox_result_init(ctypes.byref(r))
            status = _lib.talkbox_session_speak_to_file(self._h(), request.handle, _bytes(path, "path"),
                                                        _bytes(format, "format"), ctypes.byref(r))
            _check(status)
            self.last_result = _result(r)
            return self.last_result

    speak_to_wav = speak_to_file

    def __repr__(self):
        return "talkbox.Session(%r)" % (self.model,)


def _check_message(status, message):
    if status != 0:
        raise _ERRORS.get(status, TalkboxError)(message or _text(_lib.talkbox_status_name(status)))
