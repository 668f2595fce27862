// The official `openai` npm package, unchanged, against `talkbox serve`:
//   node openai_client.cjs BASE_URL API_KEY
// Streams speech (audio.speech.create, reading the body as it arrives), streams it as Server-Sent
// Events through the SDK's own SSE reader (openai/streaming), fetches a whole mp3, and checks that
// errors reach the SDK as its typed exceptions. Prints one JSON line; exit 0 = pass.
"use strict";
const OpenAI = require("openai");
const { Stream } = require("openai/streaming");

async function main() {
  const [url, key] = process.argv.slice(2);
  const client = new OpenAI({ baseURL: url + "/v1", apiKey: key, maxRetries: 0 });
  const out = {};

  // Streaming: raw PCM read chunk by chunk while the server generates it.
  // (Many short sentences: the random-weight fixture models end each one after a few frames.)
  let input = "";
  for (let i = 1; i <= 30; i++) input += "Sentence " + i + " is here, short and plain. ";
  const t0 = Date.now();
  const response = await client.audio.speech.create({ model: "tts-1", voice: "ryan", response_format: "pcm", input, seed: 11 });
  let bytes = 0, chunks = 0, firstMs = -1;
  for await (const chunk of response.body) {
    if (chunks === 0) firstMs = Date.now() - t0;
    bytes += chunk.length;
    chunks++;
  }
  Object.assign(out, { stream_bytes: bytes, stream_chunks: chunks, first_chunk_ms: firstMs, total_ms: Date.now() - t0,
                       transfer_encoding: response.headers.get("transfer-encoding") });
  if (bytes === 0 || bytes % 2 !== 0) throw new Error("bad PCM stream of " + bytes + " bytes");

  // stream_format "sse": the same request's events, parsed by the SDK's SSE stream; the decoded
  // deltas are the PCM bytes above.
  const sse = await client.audio.speech.create({ model: "tts-1", voice: "ryan", response_format: "pcm", input, seed: 11,
                                                 stream_format: "sse" });
  const pieces = [];
  let usage = null, deltas = 0;
  for await (const event of Stream.fromSSEResponse(sse, new AbortController())) {
    if (event.type === "speech.audio.delta") {
      pieces.push(Buffer.from(event.audio, "base64"));
      deltas++;
    } else if (event.type === "speech.audio.done") {
      usage = event.usage;
    } else {
      throw new Error("unexpected event " + JSON.stringify(event));
    }
  }
  const sseBytes = Buffer.concat(pieces).length;
  Object.assign(out, { sse_bytes: sseBytes, sse_deltas: deltas, sse_usage: usage, sse_content_type: sse.headers.get("content-type") });
  if (sseBytes !== bytes) throw new Error("SSE deltas hold " + sseBytes + " bytes, the pcm stream " + bytes);
  if (!usage || usage.total_tokens !== usage.input_tokens + usage.output_tokens) throw new Error("bad usage " + JSON.stringify(usage));

  // The defaults (mp3, whole file) through the SDK's helper.
  const mp3 = Buffer.from(await (await client.audio.speech.create({ model: "tts-1", voice: "vivian", input: "Hello there." })).arrayBuffer());
  out.mp3_bytes = mp3.length;
  const sync = mp3[0] === 0xff && (mp3[1] & 0xe0) === 0xe0;
  if (!(mp3.subarray(0, 3).toString() === "ID3" || sync)) throw new Error("the default response is not mp3");

  // wav with the instructions field and talkbox extensions passed through unchanged.
  const wav = Buffer.from(await (await client.audio.speech.create({
    model: "tts-1", voice: "ryan", input: "Seeded.", response_format: "wav", instructions: "Calm.", seed: 3 })).arrayBuffer());
  if (wav.subarray(0, 4).toString() !== "RIFF") throw new Error("not a wav");
  out.wav_bytes = wav.length;

  // Errors arrive as the SDK's typed errors with the server's message.
  try {
    await client.audio.speech.create({ model: "tts-1", voice: "nobody", input: "x" });
    throw new Error("unknown voice accepted");
  } catch (e) {
    if (!(e instanceof OpenAI.NotFoundError)) throw e;
    out.not_found = e.message;
  }
  try {
    await new OpenAI({ baseURL: url + "/v1", apiKey: "wrong", maxRetries: 0 }).audio.speech.create({ model: "tts-1", voice: "ryan", input: "x" });
    throw new Error("wrong key accepted");
  } catch (e) {
    if (!(e instanceof OpenAI.AuthenticationError)) throw e;
    out.unauthorized = e.message;
  }
  try {
    await client.audio.speech.create({ model: "tts-1", voice: "ryan", input: "x", speed: 5 });
    throw new Error("speed 5 accepted");
  } catch (e) {
    if (!(e instanceof OpenAI.BadRequestError)) throw e;
    out.bad_request = e.message;
  }
  const models = await client.models.list();
  out.models = models.data.map((m) => m.id);
  console.log(JSON.stringify(out));
}

main().catch((e) => { console.error("FAIL:", e && e.stack ? e.stack : e); process.exit(1); });
