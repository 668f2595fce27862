#!/usr/bin/python3
"""How closely talkbox's Japanese kanji readings (MeCab + IPAdic) agree with the official Chatterbox
preprocessing (pykakasi), sentence by sentence and character by character.

For every line of the corpus it runs `talkbox tokenize MODEL TEXT --language ja` and compares the
`preprocessed:` string with what the official MTLTokenizer.encode makes of talkbox's `normalized:`
string (lower() -> NFKD -> hiragana_normalize -> "[ja]" tag -> " " to "[SPACE]"). hiragana_normalize
is executed verbatim from the official tokenizer.py (read at run time, never copied here) with
pykakasi built from its own source checkout (its dictionaries are generated into a temporary
folder, as its setup.py does). Neither is shipped with talkbox: they are only run to measure.

Two figures are reported:
  official   - against the official pipeline as it runs: pykakasi is handed the NFKD text, in which
               voiced kana are split (が -> か + U+3099), so it reads some words differently;
  nfc-input  - against pykakasi's reading of the composed (NFC) text, its reading as a reader
               would see it (the final NFKD is the same).
Character agreement is 1 - (Levenshtein distance / length of the official string), summed over
the corpus, on the NFC form of the strings with "[ja]" dropped and "[SPACE]" read as a space.

Needs Debian's python3 with python3-deprecated (pykakasi's legacy API imports it); pykakasi's other
dependency, jaconv, is not used by the conversion and is replaced by a stub module.

Example (docs/chatterbox-languages.md):
  build/bin/talkbox convert ../shared/fixtures/chatterbox/tiny-multilingual -o /tmp/tiny.gguf
  /usr/bin/python3 tools/japanese_reading_agreement.py --talkbox build/bin/talkbox --model /tmp/tiny.gguf \\
      --pykakasi-src PYKAKASI_CHECKOUT --official-tokenizer CHATTERBOX_CHECKOUT/src/chatterbox/models/tokenizers/tokenizer.py
"""
import argparse
import ast
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import unicodedata
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
OFFICIAL_FUNCTIONS = ("is_kanji", "is_katakana", "hiragana_normalize")


def build_pykakasi(src, into):
    """Copies pykakasi's package from a source checkout and generates its dictionaries."""
    shutil.copytree(os.path.join(src, "src", "pykakasi"), os.path.join(into, "pykakasi"))
    with open(os.path.join(into, "jaconv.py"), "w") as f:
        f.write("def normalize(text):\n    raise NotImplementedError('stub: Kakasi.convert does not use jaconv')\n")
    sys.path.insert(0, os.path.join(src, "src"))
    from kakasidict import Genkanwadict  # pykakasi's own dictionary generator (its setup.py runs it)

    Genkanwadict().generate_dictionaries(os.path.join(into, "pykakasi", "data"))
    sys.path.insert(0, into)


def load_official(tokenizer_py):
    """The official is_kanji / is_katakana / hiragana_normalize, executed from tokenizer.py itself."""
    with open(tokenizer_py, encoding="utf-8") as f:
        tree = ast.parse(f.read(), tokenizer_py)
    found = [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in OFFICIAL_FUNCTIONS]
    if sorted(n.name for n in found) != sorted(OFFICIAL_FUNCTIONS):
        sys.exit(f"{tokenizer_py} does not define {', '.join(OFFICIAL_FUNCTIONS)}")
    namespace = {"logger": logging.getLogger("official"), "_kakasi": None}
    exec(compile(ast.Module(body=found, type_ignores=[]), tokenizer_py, "exec"), namespace)
    return namespace["hiragana_normalize"]


def talkbox_tokenize(talkbox, model, text):
    run = subprocess.run([talkbox, "tokenize", model, text, "--language", "ja"], capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"talkbox tokenize failed on {text!r}: {run.stderr.strip()}")
    fields = {}
    for line in run.stdout.splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip(" ")
    return fields["normalized"], fields["preprocessed"]


def official_preprocessed(hiragana_normalize, normalized, compose_first):
    text = unicodedata.normalize("NFKD", normalized.lower())
    if compose_first:
        text = unicodedata.normalize("NFC", text)
    return ("[ja]" + hiragana_normalize(text)).replace(" ", "[SPACE]")


def reading(preprocessed):
    return unicodedata.normalize("NFC", preprocessed.removeprefix("[ja]").replace("[SPACE]", " "))


def levenshtein(a, b):
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        current = [i]
        for j, cb in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--talkbox", required=True, help="the talkbox binary")
    parser.add_argument("--model", required=True, help="a multilingual Chatterbox GGUF (the tiny fixture will do)")
    parser.add_argument("--pykakasi-src", required=True, help="a checkout of github.com/miurahr/pykakasi (tag v2.3.0, "
                        "the version the official pyproject.toml pins)")
    parser.add_argument("--official-tokenizer", required=True,
                        help="resemble-ai/chatterbox's src/chatterbox/models/tokenizers/tokenizer.py")
    parser.add_argument("--corpus", default=os.path.join(HERE, "data", "japanese_everyday_sentences.txt"))
    parser.add_argument("--show-differences", action="store_true", help="print every sentence read differently")
    args = parser.parse_args()

    warnings.simplefilter("ignore")  # pykakasi's legacy API warns on every call
    with tempfile.TemporaryDirectory() as tmp:
        build_pykakasi(args.pykakasi_src, tmp)
        hiragana_normalize = load_official(args.official_tokenizer)
        with open(args.corpus, encoding="utf-8") as f:
            sentences = [line.strip() for line in f if line.strip()]
        totals = {name: {"same": 0, "distance": 0, "chars": 0} for name in ("official", "nfc-input")}
        for sentence in sentences:
            normalized, ours = talkbox_tokenize(args.talkbox, args.model, sentence)
            for name, compose_first in (("official", False), ("nfc-input", True)):
                theirs = official_preprocessed(hiragana_normalize, normalized, compose_first)
                t = totals[name]
                t["same"] += ours == theirs
                t["distance"] += levenshtein(reading(theirs), reading(ours))
                t["chars"] += len(reading(theirs))
                if args.show_differences and name == "official" and ours != theirs:
                    print(f"{sentence}\n  pykakasi: {reading(theirs)}\n  talkbox:  {reading(ours)}")
    print(f"{len(sentences)} sentences from {os.path.relpath(args.corpus)}")
    for name, t in totals.items():
        print(f"{name:10s} sentences identical: {t['same']}/{len(sentences)} ({100 * t['same'] / len(sentences):.1f}%), "
              f"characters agreeing: {100 * (1 - t['distance'] / t['chars']):.2f}% "
              f"({t['distance']} edits over {t['chars']} characters)")


if __name__ == "__main__":
    main()
