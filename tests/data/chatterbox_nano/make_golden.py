#!/usr/bin/env python3
"""Goldens for the NanoT3 test of tests/chatterbox/t3_turbo_test.cpp, made ONCE from the tiny Nano folder
that the C++ test support writes (tests/support/tiny_turbo.cpp, kTinyNanoT3; run the test binary with
TALKBOX_WRITE_TINY_NANO=<dir> to get it), with the float32 reference port (shared/reference/chatterbox/t3.py:
T3Turbo), and checked against the OFFICIAL T3 executed verbatim from a resemble-ai/chatterbox checkout.

  CHATTERBOX_GIT=<chatterbox checkout> /usr/bin/python3 tests/data/chatterbox_nano/make_golden.py <tiny nano dir> [shared dir]
(Debian's python3 with torch and numpy; no other package.)

The official side is ChatterboxTurboTTS.from_local(nano=True)'s T3: T3Config(text_tokens_dict_size=50276)
with llama_config_name = "GPT2_small" and the tts_turbo.py settings, t3.load_state_dict(t3_nano_v1.safetensors),
`del t3.tfmr.wte`, then T3.inference_turbo. Its modules are loaded by shared/reference/chatterbox/check_t3.py's
load_official() (git show HEAD:<file> of CHATTERBOX_GIT, with that script's stand-ins for the libraries Debian
lacks: transformers' GPT2Model is the port's GPT-2 behind the HF call signature, the logits processors are
transcribed from transformers 5.2.0). Scaled to the tiny folder: GPT2_SMALL_CONFIG's n_embd / hidden_size,
n_layer, n_head, n_positions / n_ctx and vocab_size, and text_tokens_dict_size = the folder's text vocabulary.
Greedy = torch.multinomial replaced by argmax (as check_t3.py does); the raw speech-head logits are recorded
with a forward hook on speech_head.

Checks (the script fails unless every one is bit-identical): the official T3's state_dict keys/shapes == the
file's; the raw logits of the first 3 tokens; the greedy tokens; their post-processing.
Writes golden.json (the T3 text ids, greedy tokens, post-processed tokens, the checks) and logits.npy
([3, 6563] raw speech-head logits of the first 3 tokens) beside this script.
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
FOLDER = sys.argv[1]
SHARED = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "../../../../shared")
sys.path.insert(0, os.path.join(HERE, "../chatterbox_turbo"))
sys.path.insert(0, os.path.join(SHARED, "reference/chatterbox"))
import make_golden as turbo_golden  # noqa: E402  (Gpt2Bpe, read_safetensors)
import t3 as ref  # noqa: E402
import check_t3  # noqa: E402

TEXT = "Hello, you and the cat."
MAX_GEN_LEN = 40


def official_nano(off, sd):
    """ChatterboxTurboTTS.from_local(nano=True)'s T3 (tts_turbo.py), at the tiny folder's sizes."""
    D = sd["tfmr.wpe.weight"].shape[1]
    n_layer = sum(1 for k in sd if k.endswith(".ln_1.weight"))
    heads = json.load(open(os.path.join(FOLDER, "tiny_hparams.json")))["t3_nano_v1"]["gpt2"]["n_head"]
    positions = sd["tfmr.wpe.weight"].shape[0]
    off["llama_configs"].GPT2_SMALL_CONFIG.update(n_embd=D, hidden_size=D, n_layer=n_layer, n_head=heads, n_positions=positions,
                                                  n_ctx=positions, vocab_size=sd["tfmr.wte.weight"].shape[0])
    hp = off["t3_config"].T3Config(text_tokens_dict_size=sd["text_emb.weight"].shape[0])
    hp.llama_config_name = "GPT2_small"
    hp.speech_tokens_dict_size = 6563
    hp.input_pos_emb = None
    hp.speech_cond_prompt_len = 375
    hp.use_perceiver_resampler = False
    hp.emotion_adv = False
    t3 = off["t3"].T3(hp)
    keys = {k: tuple(v.shape) for k, v in t3.state_dict().items()} == {k: tuple(v.shape) for k, v in sd.items()}
    t3.load_state_dict(sd)
    del t3.tfmr.wte
    return t3.eval(), (D, n_layer, heads), keys


def main():
    bpe = turbo_golden.Gpt2Bpe(FOLDER)
    sd = turbo_golden.read_safetensors(os.path.join(FOLDER, "t3_nano_v1.safetensors"))
    conds = turbo_golden.read_safetensors(os.path.join(SHARED, "fixtures/chatterbox/tiny-multilingual/conds.safetensors"))
    spk, prompt = conds["t3.speaker_emb"], conds["t3.cond_prompt_speech_tokens"]
    ids = bpe.encode(ref.punc_norm_turbo(TEXT))

    # The port: what the C++ T3 is held to.
    off = check_t3.load_official()
    model, (D, n_layer, heads), same_keys = official_nano(off, sd)
    cfg = dict(ref.GPT2_SMALL, n_embd=D, n_layer=n_layer, n_head=heads, n_positions=sd["tfmr.wpe.weight"].shape[0],
               vocab_size=sd["tfmr.wte.weight"].shape[0])
    port = ref.T3Turbo(cfg, text_vocab=sd["text_emb.weight"].shape[0], speech_vocab=sd["speech_emb.weight"].shape[0])
    port.load_state_dict(sd, strict=True)
    port.eval()
    rec = {}
    with torch.no_grad():
        out = port.inference_turbo(spk, prompt, torch.tensor([ids]), max_gen_len=MAX_GEN_LEN, greedy=True, record=rec)
    port_logits = torch.stack(rec["logits"][:3]).numpy().astype(np.float32)

    # The official T3, greedy.
    official_logits = []
    model.speech_head.register_forward_hook(lambda m, i, o: official_logits.append(o[0, -1].detach().clone()))
    cond = off["cond_enc"].T3Cond(speaker_emb=spk, cond_prompt_speech_tokens=prompt, emotion_adv=0.5 * torch.ones(1, 1, 1))
    multinomial = torch.multinomial
    torch.multinomial = lambda probs, num_samples: torch.argmax(probs, dim=-1, keepdim=True)
    try:
        with torch.no_grad():
            official = model.inference_turbo(cond, torch.tensor([ids]), max_gen_len=MAX_GEN_LEN)
    finally:
        torch.multinomial = multinomial
    official_logits = torch.stack(official_logits[:3]).numpy().astype(np.float32)

    checks = {
        "state_dict keys/shapes": same_keys,
        "logits of the first 3 tokens": bool(np.array_equal(official_logits, port_logits)),
        "greedy tokens": official[0].tolist() == out[0].tolist(),
        "post-processed": ref.postprocess_turbo(official[0]).tolist() == ref.postprocess_turbo(out[0]).tolist(),
    }
    for name, same in checks.items():
        print(f"  official vs port: {name:30s} {'identical' if same else 'MISMATCH'}")
    if not all(checks.values()):
        sys.exit("the port differs from the official T3: no golden written")

    commit = subprocess.run(["git", "-C", os.environ["CHATTERBOX_GIT"], "rev-parse", "HEAD"], check=True, capture_output=True,
                            text=True).stdout.strip()
    golden = {"t3": {"text": TEXT, "text_ids": ids, "max_gen_len": MAX_GEN_LEN, "greedy_tokens": out[0].tolist(),
                     "postprocessed": ref.postprocess_turbo(out[0]).tolist()},
              "official": {"chatterbox_commit": commit, "bit_identical": sorted(checks)}}
    np.save(os.path.join(HERE, "logits.npy"), port_logits)
    with open(os.path.join(HERE, "golden.json"), "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)
    print("greedy tokens:", out[0].tolist())


if __name__ == "__main__":
    main()
