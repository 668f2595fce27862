# The loudness goldens of tests/audio/loudness_test.cpp: pyloudnorm 0.2.0 (csteinmetz1/pyloudnorm @ b8d67bf,
# the version Chatterbox's unpinned dependency resolves to) run verbatim, with scipy.signal.lfilter replaced by
# the stand-in in the comment below (direct form II transposed in float64, what scipy computes for a biquad).
# Usage: PYLOUDNORM=/path/containing/pyloudnorm-and-a-scipy-stand-in /usr/bin/python3 make_golden.py
#   scipy/signal.py stand-in:
#     def lfilter(b, a, x): y[n] = b0 x[n] + z1; z1 = b1 x[n] - a1 y[n] + z2; z2 = b2 x[n] - a2 y[n]  (b, a / a[0])
import os
import sys, wave, math, numpy as np
sys.path.insert(0, os.environ['PYLOUDNORM'])
import pyloudnorm as ln
w = wave.open('/work/shared/fixtures/chatterbox/audio/long_12s.wav')
pcm = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)
wav = (pcm.astype(np.float32) / 32768.0)
m = ln.Meter(24000)
L = m.integrated_loudness(wav)
print('long_12s', repr(L), 'gain', 10 ** ((-27 - L) / 20))
# synthetic: 3 s tone 997 Hz at 0.5, 2 s silence, 2 s tone 220 Hz at 0.01 (below relative gate), at 24 kHz
t = np.arange(int(7 * 24000)) / 24000.0
x = np.zeros_like(t)
x[:72000] = 0.5 * np.sin(2 * math.pi * 997 * t[:72000])
x[120000:] = 0.01 * np.sin(2 * math.pi * 220 * t[120000:])
x = x.astype(np.float32)
print('synthetic', repr(m.integrated_loudness(x)))
print('full-scale 997 Hz 48k', repr(ln.Meter(48000).integrated_loudness(np.sin(2*math.pi*997*np.arange(48000*5)/48000).astype(np.float32))))
