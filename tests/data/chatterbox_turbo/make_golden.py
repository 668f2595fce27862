#!/usr/bin/env python3
"""Goldens for tests/chatterbox/t3_turbo_test.cpp, made ONCE from the tiny Turbo folder that the C++
test support writes (tests/support/tiny_turbo.cpp; run the test binary with
TALKBOX_WRITE_TINY_TURBO=<dir> to get it), with the float32 reference port
(shared/reference/chatterbox/t3.py: T3Turbo, punc_norm_turbo) and a GPT-2 byte-level BPE written after
OpenAI's encoder.py (GPT-2's own tokenizer; added tokens split off first, as Hugging Face does).

  /usr/bin/python3 tests/data/chatterbox_turbo/make_golden.py <tiny turbo dir> [shared dir]
(Debian's python3 with torch and numpy; no other package.)

Writes golden.json (BPE ids of a small corpus, punc_norm_turbo cases, the T3 text ids, greedy tokens
and post-processed tokens) and logits.npy ([3, 6563] raw speech-head logits of the first 3 tokens)
beside this script.
"""
import json
import os
import struct
import sys

import re
import unicodedata

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
FOLDER = sys.argv[1]
SHARED = sys.argv[2] if len(sys.argv) > 2 else os.path.join(HERE, "../../../../shared")
sys.path.insert(0, os.path.join(SHARED, "reference/chatterbox"))
import t3 as ref  # noqa: E402


def read_safetensors(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    out = {}
    for k, v in header.items():
        if k == "__metadata__":
            continue
        dt = {"F32": np.float32, "I64": np.int64}[v["dtype"]]
        s, e = v["data_offsets"]
        out[k] = torch.from_numpy(np.frombuffer(b[8 + n + s:8 + n + e], dtype=dt).reshape(v["shape"]).copy())
    return out


# ---------------------------------------------------------------- GPT-2 BPE (encoder.py)
def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def is_letter(c):
    return unicodedata.category(c).startswith("L")


def is_number(c):
    return unicodedata.category(c).startswith("N")


def gpt2_pieces(text):
    """re.findall of GPT-2's pattern
    's|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+
    spelled out as a scanner (the stdlib re has no \\p{L}); \\s = str.isspace."""
    pieces, i, n = [], 0, len(text)

    def run(j, pred):
        while j < n and pred(text[j]):
            j += 1
        return j

    other = lambda c: not c.isspace() and not is_letter(c) and not is_number(c)  # noqa: E731
    while i < n:
        m = next((len(c) for c in ("'s", "'t", "'re", "'ve", "'m", "'ll", "'d") if text.startswith(c, i)), 0)
        if not m:
            for pred in (is_letter, is_number, other):
                j = i + 1 if text[i] == " " and i + 1 < n and pred(text[i + 1]) else i
                e = run(j, pred)
                if e > j:
                    m = e - i
                    break
        if not m and text[i].isspace():
            e = run(i, str.isspace)
            m = e - i if e == n or e - 1 == i else e - 1 - i  # \\s+(?!\\S) gives the last space back
        if not m:
            raise ValueError("no match at %d" % i)
        pieces.append(text[i:i + m])
        i += m
    return pieces


class Gpt2Bpe:
    def __init__(self, folder):
        self.encoder = json.load(open(os.path.join(folder, "vocab.json"), encoding="utf-8"))
        self.added = json.load(open(os.path.join(folder, "added_tokens.json"), encoding="utf-8"))
        lines = open(os.path.join(folder, "merges.txt"), encoding="utf-8").read().split("\n")[1:]
        merges = [tuple(l.split()) for l in lines if l]
        self.ranks = dict(zip(merges, range(len(merges))))
        self.byte_encoder = bytes_to_unicode()

    def bpe(self, token):
        word = tuple(token)
        while len(word) > 1:
            pairs = set(zip(word, word[1:]))
            best = min(pairs, key=lambda p: self.ranks.get(p, float("inf")))
            if best not in self.ranks:
                break
            first, second = best
            new, i = [], 0
            while i < len(word):
                try:
                    j = word.index(first, i)
                except ValueError:
                    new.extend(word[i:])
                    break
                new.extend(word[i:j])
                i = j
                if word[i] == first and i < len(word) - 1 and word[i + 1] == second:
                    new.append(first + second)
                    i += 2
                else:
                    new.append(word[i])
                    i += 1
            word = tuple(new)
        return word

    def encode(self, text):
        ids = []
        split = re.compile("(" + "|".join(re.escape(a) for a in sorted(self.added, key=len, reverse=True)) + ")")
        for chunk in split.split(text):
            if chunk in self.added:
                ids.append(self.added[chunk])
                continue
            for piece in gpt2_pieces(chunk):
                mapped = "".join(self.byte_encoder[b] for b in piece.encode("utf-8"))
                ids.extend(self.encoder[t] for t in self.bpe(mapped))
        return ids


CORPUS = [
    "Hello world.",
    "The cat and the dog, you see?",
    "  leading spaces and    runs of   spaces  ",
    "It's what they've said: I'm sure we'll go, he'd agree.",
    "Numbers 12, 2024 and 3.14159!",
    "[laugh] That is funny [chuckle] isn't it?",
    "Line one\nLine two\n\n  indented\ttab",
    "Café naïve résumé — “quoted” ‘text’…",
    "日本語のテキストと한국어, emoji 🙂 too.",
    "UPPER lower MiXeD caseS's",
    "a-b_c/d\\e|f~g@h#i$j%k^l&m*n(o)p",
    "",
]

PUNC = [
    "hello there",
    "Wait... what - really; yes",
    "ellipsis… and colon: here",
    "dash — and – dashes ,spaces",
    "“quotes” and ‘single’   spaced   words  ",
    "already done!",
    "",
    "ends with comma,",
]


def main():
    bpe = Gpt2Bpe(FOLDER)
    golden = {"bpe": [{"text": t, "ids": bpe.encode(t)} for t in CORPUS],
              "punc_norm": [{"text": t, "normalized": ref.punc_norm_turbo(t)} for t in PUNC]}

    sd = read_safetensors(os.path.join(FOLDER, "t3_turbo_v1.safetensors"))
    D = sd["tfmr.wpe.weight"].shape[1]
    cfg = dict(ref.GPT2_MEDIUM, n_embd=D, n_layer=sum(1 for k in sd if k.endswith(".ln_1.weight")), n_head=4,
               n_positions=sd["tfmr.wpe.weight"].shape[0], vocab_size=sd["tfmr.wte.weight"].shape[0])
    model = ref.T3Turbo(cfg, text_vocab=sd["text_emb.weight"].shape[0], speech_vocab=sd["speech_emb.weight"].shape[0])
    model.load_state_dict(sd, strict=True)
    model.eval()

    conds = read_safetensors(os.path.join(SHARED, "fixtures/chatterbox/tiny-multilingual/conds.safetensors"))
    text = "Hello, you and the cat."
    ids = bpe.encode(ref.punc_norm_turbo(text))
    rec = {}
    out = model.inference_turbo(conds["t3.speaker_emb"], conds["t3.cond_prompt_speech_tokens"], torch.tensor([ids]),
                                max_gen_len=40, greedy=True, record=rec)
    golden["t3"] = {"text": text, "text_ids": ids, "max_gen_len": 40, "greedy_tokens": out[0].tolist(),
                    "postprocessed": ref.postprocess_turbo(out[0]).tolist()}
    np.save(os.path.join(HERE, "logits.npy"), torch.stack(rec["logits"][:3]).numpy().astype(np.float32))
    with open(os.path.join(HERE, "golden.json"), "w", encoding="utf-8") as f:
        json.dump(golden, f, ensure_ascii=False, indent=1)
    print("greedy tokens:", out[0].tolist())


if __name__ == "__main__":
    main()
