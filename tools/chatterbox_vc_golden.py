#!/usr/bin/python3
"""Goldens for talkbox's voice conversion (`talkbox vc`) against the official ChatterboxVC.

resemble-ai/chatterbox's src/chatterbox/vc.py (HEAD 5de7a54), step by step, on the tiny fixture
checkpoint (shared/fixtures/chatterbox/tiny-multilingual), with the float32 reference port of
shared/reference/chatterbox (refaudio.py: librosa.load, the S3 tokenizer, embed_ref; s3gen.py:
S3Token2Wav.inference), which shared/reference/chatterbox/check_*.py verified bit for bit against
the official code:

  from_local:        ref_dict = conds.pt["gen"]                      (case without a target)
  set_target_voice:  librosa.load(target, sr=24000)[:10 s] -> s3gen.embed_ref(wav, 24000)
  generate:          librosa.load(source, sr=16000) (soxr_hq) -> s3gen.tokenizer(audio_16)
                     -> s3gen.inference(speech_tokens, ref_dict) (flow, HiFT, trim_fade)
                     -> [the Perth watermark: NOT applied; it has its own goldens, tests/data/perth]

The official code draws S3Gen's noise from torch's global generator (CFM start noise z [80, Tm],
SineGen phases [9] and normals [9, L]); here they are injected, drawn from a generator that a C++
test reproduces bit for bit without storing them (they would be ~35 KB per speech token):

  uniform(seed, i) = splitmix64 output i (state seed + i * 0x9E3779B97F4A7C15, i = 1, 2, ...), top
                     24 bits / 2**24 (exact in float32 and double)
  normal           = the sum of 12 consecutive uniforms - 6 (Irwin-Hall: mean 0, variance 1; the sum
                     is exact in double) rounded to float32
  z                = normals(seed) in row-major [80, Tm]; phases = float32((2u - 1) * pi) of
                     uniforms(seed + 1) [9]; sine normals = normals(seed + 2) in [9, L]

Writes tests/data/chatterbox_vc/<case>/: case.json (inputs, the speech tokens, sizes), mel.npy
(1, 80, M: what HiFT receives), f0.npy (1, M: HiFT's f0 predictor on that mel) and wav.npy (the
24 kHz output, before the watermark), float32.

Recordings over 30 s (LONG_CASES): the official tokenizer reads them in overlapping 30 s windows
(tools/s3tokenizer_long.py adds that path to the port). Only the tokenizer differs there, so these
cases store the speech tokens alone (case.json): the source is fixture clips of one sample rate
joined end to end at that rate, the file a user would pass, then librosa.load(sr=16000) as above.

Needs Debian's torch, numpy, scipy and python3-soundfile, and libsoxr (the port calls it as
librosa does). The build and the tests never run this script; rerun it only to regenerate:

  /usr/bin/python3 tools/chatterbox_vc_golden.py [--shared ../shared] [--out tests/data/chatterbox_vc]
"""
import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

import s3tokenizer_long  # tools/: the tokenizer's path for recordings over 30 s

REPO = Path(__file__).resolve().parents[1]
S3_SR, S3GEN_SR, DEC_COND_LEN = 16000, 24000, 10 * 24000
GAMMA = 0x9E3779B97F4A7C15

# name, source (relative to shared/fixtures), target for set_target_voice or None (conds.pt), noise seed
CASES = [
    ("builtin_zh2s", "qwen3tts/audio/zh_2s.wav", None, 11),
    ("target_long12s_odd", "qwen3tts/audio/en_odd_29999.wav", "chatterbox/audio/long_12s.wav", 12),
]
# name, the clips joined into the source: 42.25 s (two windows) and 53.75 s (three; the last one's 44
# tokens fall inside the 50 that the merge drops, so it adds none)
LONG_CLIP = "chatterbox/audio/long_12s.wav"
LONG_CASES = [
    ("long_42s", [LONG_CLIP, "qwen3tts/audio/en_3p5s.wav", LONG_CLIP, "qwen3tts/audio/zh_2s.wav", LONG_CLIP]),
    ("long_54s", [LONG_CLIP] * 4 + ["qwen3tts/audio/en_3p5s.wav", "qwen3tts/audio/en_odd_29999.wav"]),
]


def uniforms(seed, n):
    i = np.arange(1, n + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + i * np.uint64(GAMMA)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(40)).astype(np.float64) / float(1 << 24)


def normals(seed, n):
    return (uniforms(seed, 12 * n).reshape(n, 12).sum(axis=1) - 6.0).astype(np.float32)


def draw_noise(seed, n_prompt, n_tokens, n_prompt_feat):
    tm = 2 * (n_prompt + n_tokens)
    samples = (tm - n_prompt_feat) * 480
    z = torch.from_numpy(normals(seed, 80 * tm).reshape(1, 80, tm))
    phase = torch.from_numpy(((uniforms(seed + 1, 9) * 2 - 1) * np.pi).astype(np.float32).reshape(1, 9, 1))
    randn = torch.from_numpy(normals(seed + 2, 9 * samples).reshape(1, 9, samples))
    return z, phase, randn


def load_models(shared):
    sys.path.insert(0, str(shared / "reference"))
    sys.path.insert(0, str(shared / "reference" / "chatterbox"))
    import refaudio as R
    import s3gen as S

    s3tokenizer_long.install(R)

    ckpt = shared / "fixtures" / "chatterbox" / "tiny-multilingual"
    hp = json.loads((ckpt / "tiny_hparams.json").read_text())
    sd = torch.load(ckpt / "s3gen.pt", map_location="cpu", weights_only=True)
    s3 = S.load_s3gen(S.S3GenConfig(meanflow=False, **{k: v for k, v in hp["s3gen"].items() if k != "meanflow"}), sd)
    tc = {k: hp["s3_tokenizer"][k] for k in ("n_mels", "n_audio_state", "n_audio_head", "n_audio_layer")}
    cp = {k: hp["campplus"][k] for k in ("m_channels", "init_channels", "growth_rate", "bn_size", "embedding_size")}
    holder = R.S3GenRefHolder(tokenizer_config=R.ModelConfig(**tc), campplus_kwargs=cp).eval()
    holder.load_state_dict({k: v for k, v in sd.items() if k.startswith(("tokenizer.", "speaker_encoder."))}, strict=True)
    conds = torch.load(ckpt / "conds.pt", map_location="cpu", weights_only=True)
    return R, s3, holder, conds


def run_case(models, fixtures, source, target, seed):
    R, s3, holder, conds = models
    with torch.inference_mode():
        if target:  # set_target_voice
            ref24, _ = R.librosa_load(str(fixtures / target), sr=S3GEN_SR)
            ref_dict = holder.embed_ref(ref24[:DEC_COND_LEN], S3GEN_SR)
        else:  # from_local: the built-in voice
            ref_dict = dict(conds["gen"])
        audio_16, _ = R.librosa_load(str(fixtures / source), sr=S3_SR)
        tokens, _ = holder.tokenizer(torch.from_numpy(audio_16).float()[None,])
    n_prompt, n_prompt_feat = ref_dict["prompt_token"].shape[1], ref_dict["prompt_feat"].shape[1]
    z, phase, randn = draw_noise(seed, n_prompt, tokens.shape[1], n_prompt_feat)
    trace = {}
    wav, _ = s3.inference(tokens, ref_dict["prompt_token"], ref_dict["prompt_feat"], ref_dict["embedding"],
                          prompt_token_len=ref_dict["prompt_token_len"], z=z, sine_phase=phase, sine_randn=randn,
                          source_noise_randn=torch.zeros(1, randn.shape[2], 1), trace=trace)
    return dict(tokens=tokens[0].tolist(), source_16k_samples=int(audio_16.shape[0]), prompt_tokens=int(n_prompt),
                prompt_feat_frames=int(n_prompt_feat), prompt_token=ref_dict["prompt_token"][0].long().tolist(),
                mel=trace["mel"].float().numpy(), f0=trace["f0"].float().numpy(), wav=wav.squeeze(0).float().numpy())


def run_long_case(models, fixtures, clips):
    R, _, holder, _ = models
    parts = [R.load_audio_file(fixtures / c) for c in clips]
    rates = {sr for _, sr in parts}
    assert len(rates) == 1, f"clips of one sample rate only, got {rates}"
    sr = rates.pop()
    audio_16 = R.librosa_resample(np.concatenate([y for y, _ in parts]), orig_sr=sr, target_sr=S3_SR)
    with torch.inference_mode():
        tokens, _ = holder.tokenizer(torch.from_numpy(audio_16).float()[None,])
        mel = holder.tokenizer.log_mel_spectrogram(torch.from_numpy(audio_16).float()[None,])
        whole_hidden, _ = holder.tokenizer.encoder(mel, torch.tensor([mel.shape[2]]))
        whole = holder.tokenizer.quantizer.encode(whole_hidden)[0].tolist()
    tokens = tokens[0].tolist()
    differ = next((i for i, (a, b) in enumerate(zip(tokens, whole)) if a != b), min(len(tokens), len(whole)))
    assert tokens != whole, "the windows should give other tokens than the whole recording at once"
    return dict(sources=clips, source_sample_rate=int(sr), source_16k_samples=int(audio_16.shape[0]),
                mel_frames=int(mel.shape[2]), windows=[list(b) for b in s3tokenizer_long.window_bounds(int(mel.shape[2]))],
                whole_recording_tokens=len(whole), first_token_differing_from_whole_recording=int(differ),
                speech_tokens=tokens)


def save_npy(path, array):
    np.save(path, np.ascontiguousarray(array, dtype=np.float32))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    ap.add_argument("--out", type=Path, default=REPO / "tests" / "data" / "chatterbox_vc")
    args = ap.parse_args()
    torch.set_num_threads(1)
    models = load_models(args.shared)
    fixtures = args.shared / "fixtures"
    for name, source, target, seed in CASES:
        r = run_case(models, fixtures, source, target, seed)
        d = args.out / name
        d.mkdir(parents=True, exist_ok=True)
        w = r["wav"]
        case = dict(source=source, target=target, noise_seed=seed, source_16k_samples=r["source_16k_samples"],
                    speech_tokens=r["tokens"], prompt_tokens=r["prompt_tokens"],
                    prompt_feat_frames=r["prompt_feat_frames"], mel_frames=int(r["mel"].shape[2]),
                    wav_samples=int(w.shape[0]), wav_rms=float(np.sqrt(np.mean(w.astype(np.float64) ** 2))),
                    wav_peak=float(np.abs(w).max()))
        if target:
            case["prompt_token"] = r["prompt_token"]
        (d / "case.json").write_text(json.dumps(case, indent=1) + "\n")
        save_npy(d / "mel.npy", r["mel"])
        save_npy(d / "f0.npy", r["f0"])
        save_npy(d / "wav.npy", w)
        print(name, {k: v for k, v in case.items() if k not in ("speech_tokens", "prompt_token")},
              "tokens", len(r["tokens"]))
    for name, clips in LONG_CASES:
        case = run_long_case(models, fixtures, clips)
        d = args.out / name
        d.mkdir(parents=True, exist_ok=True)
        (d / "case.json").write_text(json.dumps(case, indent=1) + "\n")
        print(name, {k: v for k, v in case.items() if k != "speech_tokens"}, "tokens", len(case["speech_tokens"]))


if __name__ == "__main__":
    main()
