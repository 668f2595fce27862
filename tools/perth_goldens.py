#!/usr/bin/python3
"""Goldens for talkbox's port of Resemble AI's Perth implicit watermarker (src/watermark).

Runs the official code (resemble-ai/Perth, read from a git checkout or mirror, never copied into
talkbox) on a small PerthNet with seeded random weights and writes, into tests/data/perth/:

  perth_tiny.pth.tar   the random weights in the official checkpoint layout
                       (torch.save({"model": state_dict, "step": N}))
  signal_32k.npy       a 0.5 s test signal at the net's 32 kHz (float32 .npy)
  embedded_32k.npy     PerthImplicitWatermarker.apply_watermark(signal, 32000)
  signal_24k.npy       a 0.5 s test signal at Chatterbox's 24 kHz
  poly_24k_32k.npy     librosa.resample(signal_24k, 24000, 32000, res_type="polyphase")
  goldens.json         the detector's outputs: the raw decoder value and get_watermark(round=False)
                       on each signal, and the sizes

The architecture is the released one (hparams.yaml: 32 kHz, n_fft 2048, hop 320, Hann window,
2 kHz watermark band) except hidden_size, 16 instead of 256, so that the weights stay ~200 KB.

Needs torch, torchaudio, numpy, scipy and PyYAML (Debian: python3-torch python3-torchaudio
python3-scipy python3-yaml). librosa is not in Debian: a stand-in module provides the one function
Perth calls, librosa.resample, for the two paths used here (equal rates: no call; "polyphase":
scipy.signal.resample_poly on the gcd-reduced rates, as librosa 0.10 does). The build and tests
never run this script; rerun it only to regenerate the files:

  python3 tools/perth_goldens.py --perth /work/.mirror/resemble-ai+Perth/repo --out tests/data/perth
"""
import argparse
import hashlib
import json
import math
import os
import subprocess
import sys
import tempfile
import types

import numpy as np
import torch

HIDDEN = 16
STEP = 1234
SEED = 20261207


def librosa_stand_in():
    import scipy.signal

    def resample(y, *, orig_sr, target_sr, res_type="soxr_hq", fix=True, scale=False, axis=-1):
        if orig_sr == target_sr:
            return y
        if res_type != "polyphase":
            raise NotImplementedError("the librosa stand-in implements res_type='polyphase' only")
        g = math.gcd(int(orig_sr), int(target_sr))
        n_out = int(math.ceil(y.shape[-1] * float(target_sr) / orig_sr))
        y_hat = scipy.signal.resample_poly(y, target_sr // g, orig_sr // g, axis=-1)
        assert y_hat.shape[-1] == n_out  # librosa's fix_length is then a no-op
        return np.asarray(y_hat, dtype=y.dtype)

    module = types.ModuleType("librosa")
    module.resample = resample
    return module


def export_perth(repo, into):
    """The official package's sources at the checkout's HEAD, written under `into` (the released
    checkpoint's blob is not needed and may be missing from a partial clone)."""
    def git(*args):
        return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True).stdout

    for path in git("ls-tree", "-r", "--name-only", "HEAD", "perth").decode().split():
        if not (path.endswith(".py") or path.endswith(".yaml")):
            continue
        os.makedirs(os.path.join(into, os.path.dirname(path)), exist_ok=True)
        with open(os.path.join(into, path), "wb") as f:
            f.write(git("show", "HEAD:" + path))
    return git("rev-parse", "HEAD").decode().strip()


def test_signal(sr, seconds, seed):
    """Speech-like: a few harmonics with vibrato under noise, a silent start (masked frames)."""
    rng = np.random.default_rng(seed)
    n = int(sr * seconds)
    t = np.arange(n) / sr
    f0 = 140.0 + 15.0 * np.sin(2 * np.pi * 3.0 * t)
    phase = 2 * np.pi * np.cumsum(f0) / sr
    x = sum(0.25 / k * np.sin(k * phase) for k in range(1, 9))
    x = x * (0.6 + 0.4 * np.sin(2 * np.pi * 1.7 * t)) + 0.02 * rng.standard_normal(n)
    x[: int(0.08 * sr)] = 0.0
    return x.astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--perth", required=True, help="git checkout of resemble-ai/Perth")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    work = tempfile.mkdtemp(prefix="perth-goldens-")
    commit = export_perth(args.perth, work)
    sys.modules["librosa"] = librosa_stand_in()
    sys.path.insert(0, work)
    import yaml
    from perth.perth_net.perth_net_implicit.config import PerthConfig
    from perth.perth_net.perth_net_implicit.model.perth_net import PerthNet
    from perth.perth_net.perth_net_implicit.perth_watermarker import PerthImplicitWatermarker

    with open(os.path.join(work, "perth/perth_net/pretrained/implicit/hparams.yaml")) as f:
        hp = yaml.safe_load(f)
    hp["hidden_size"] = HIDDEN
    hp = PerthConfig(**hp)

    torch.manual_seed(SEED)
    net = PerthNet(hp)
    with torch.no_grad():
        # torch's default init, with the encoder's last conv scaled down so that the residual it
        # adds stays a fraction of a dB, as a trained watermarker's does.
        net.encoder.layers[-1].conv.weight.mul_(0.02)
        net.encoder.layers[-1].conv.bias.mul_(0.02)
        # The decoders' last convs scaled up and their biases cleared, so that the detector's output
        # depends on the audio (torch's init leaves it near a constant set by the biases).
        for branch in (net.decoder.slow_layers, net.decoder.normal_layers, net.decoder.fast_layers):
            branch[-1].conv.weight.mul_(20.0)
            branch[-1].conv.bias.zero_()

    models = os.path.join(work, "models", "tiny")
    os.makedirs(models)
    with open(os.path.join(models, "hparams.yaml"), "w") as f:
        yaml.dump(hp._asdict(), f)
    ckpt = os.path.join(models, f"perth_net_{STEP:06d}.pth.tar")
    torch.save({"model": net.state_dict(), "step": STEP}, ckpt)
    with open(ckpt, "rb") as src, open(os.path.join(args.out, "perth_tiny.pth.tar"), "wb") as dst:
        dst.write(src.read())

    # Loaded back through the official loader, as the package does.
    wm = PerthImplicitWatermarker(run_name="tiny", models_dir=os.path.join(work, "models"))
    wm.perth_net.eval()

    def raw_decoder(signal, sr):
        if sr != hp.sample_rate:
            signal = sys.modules["librosa"].resample(signal, orig_sr=sr, target_sr=hp.sample_rate, res_type="polyphase")
        mag, _ = wm.perth_net.ap.signal_to_magphase(torch.from_numpy(signal.copy()))
        return float(wm.perth_net.decoder(mag[None])[0])

    with torch.no_grad():
        s32 = test_signal(32000, 0.5, SEED)
        embedded = np.asarray(wm.apply_watermark(s32, sample_rate=32000), dtype=np.float32)
        s24 = test_signal(24000, 0.5, SEED + 1)
        poly = sys.modules["librosa"].resample(s24, orig_sr=24000, target_sr=32000, res_type="polyphase")
        mag, _ = wm.perth_net.ap.signal_to_magphase(torch.from_numpy(s32.copy()))
        wmag, _ = wm.perth_net.encoder(mag[None])
        with open(ckpt, "rb") as f:
            data = f.read()
        goldens = {
            "perth_commit": commit,
            "checkpoint_git_blob": hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest(),
            "hidden_size": HIDDEN,
            "step": STEP,
            "seed": SEED,
            "frames_32k": int(mag.shape[1]),
            "encoder_residual_abs_max": float((wmag[0] - mag).abs().max()),
            "detector": {
                name: {"raw": raw_decoder(sig, sr), "confidence": float(wm.get_watermark(sig, sample_rate=sr, round=False))}
                for name, sig, sr in (("signal_32k", s32, 32000), ("embedded_32k", embedded, 32000),
                                      ("signal_24k", s24, 24000))
            },
        }
    for name, arr in (("signal_32k", s32), ("embedded_32k", embedded), ("signal_24k", s24), ("poly_24k_32k", poly)):
        np.save(os.path.join(args.out, name + ".npy"), np.asarray(arr, dtype="<f4"))
    with open(os.path.join(args.out, "goldens.json"), "w") as f:
        json.dump(goldens, f, indent=1)
        f.write("\n")
    print(json.dumps(goldens, indent=1))


if __name__ == "__main__":
    main()
