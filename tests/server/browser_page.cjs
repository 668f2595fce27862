// Headless Chromium (playwright-core, the system's /usr/bin/chromium) on the page served at /:
//   node browser_page.cjs BASE_URL API_KEY REFERENCE_CLIP
// Drives every part of the page: a voice from an uploaded clip and one recorded from Chromium's fake
// microphone, the voice list and its delete buttons, speech streamed with its live waveform and
// progress line (by button, by Ctrl+Enter and Cmd+Enter in the text), Stop, the session's history
// with replay and download, SSML and a dialogue script with captions streamed as Server-Sent Events
// and highlighted in turn as the audio plays, voice conversion of an uploaded recording (the server
// has a Chatterbox model), accessible names, and no errors in the console.
// Prints one JSON line; exit 0 = pass.
"use strict";
const fs = require("fs");
const { chromium } = require("playwright-core");

function check(ok, what) {
  if (!ok) throw new Error(what);
}

// The tiny fixture model synthesises a second of audio in milliseconds, so how many reads the page
// gets of a real response depends on the machine's load: one or two when Chromium is slow to read
// (every byte has arrived by then), and then nothing can be drawn "while it streams". The page's
// fetch of /v1/audio/speech therefore hands its body on in pieces of PIECE_BYTES, one per read, a
// little apart: the same bytes, in a number of reads the test knows.
const PIECE_BYTES = 4800;  // 0.1 s of 24 kHz 16-bit audio
function paceSpeech(pieceBytes) {
  const realFetch = window.fetch;
  window.fetch = async (input, init) => {
    const res = await realFetch(input, init);
    if (!String(input).endsWith("/v1/audio/speech") || !res.ok || !res.body) return res;
    const reader = res.body.getReader();
    let pending = new Uint8Array(0);
    const body = new ReadableStream({
      async pull(out) {
        while (pending.length < pieceBytes) {
          const { value, done } = await reader.read();  // an abort (Stop) rejects here and reaches the page
          if (done) break;
          const joined = new Uint8Array(pending.length + value.length);
          joined.set(pending);
          joined.set(value, pending.length);
          pending = joined;
        }
        if (!pending.length) return out.close();
        await new Promise((r) => setTimeout(r, 20));
        // Stop aborts the fetch: what was received but not yet handed on is dropped, as a real body's is.
        const signal = init && init.signal;
        if (signal && signal.aborted) throw signal.reason || new DOMException("The operation was aborted.", "AbortError");
        out.enqueue(pending.slice(0, pieceBytes));
        pending = pending.slice(pieceBytes);
      },
      cancel(reason) { return reader.cancel(reason); },
    }, { highWaterMark: 0 });
    return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
  };
}

async function main() {
  const [url, key, clip] = process.argv.slice(2);
  const browser = await chromium.launch({
    executablePath: process.env.TALKBOX_CHROMIUM || "/usr/bin/chromium",
    // The fake-media flags grant the microphone without a prompt and feed it a generated beep.
    args: ["--no-sandbox", "--autoplay-policy=no-user-gesture-required", "--use-fake-ui-for-media-stream",
           "--use-fake-device-for-media-stream"],
  });
  const out = {};
  try {
    const page = await browser.newPage();
    await page.addInitScript(paceSpeech, PIECE_BYTES);
    const errors = [], dialogs = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    page.on("console", (m) => { if (m.type() === "error") errors.push("console: " + m.text()); });
    page.on("dialog", (d) => { dialogs.push(d.message()); d.accept(); });
    // Self-contained: nothing is fetched from anywhere but the server (no CDN, fonts or scripts).
    const foreign = [];
    page.on("request", (r) => { if (!/^(blob|data):/.test(r.url()) && !r.url().startsWith(url + "/")) foreign.push(r.url()); });
    const text = (sel) => page.textContent(sel);
    const waitText = (sel, re, ms) => page.waitForFunction(([s, r]) => new RegExp(r).test(document.querySelector(s).textContent),
                                                           [sel, re.source], { timeout: ms || 20000 });
    // Pixels the waveform canvas has drawn (it is cleared to transparent).
    const ink = () => page.evaluate(() => {
      const c = document.getElementById("wave"), d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
      let n = 0;
      for (let i = 3; i < d.length; i += 4) n += d[i] > 0;
      return n;
    });
    const listed = () => page.evaluate(() => [...document.querySelectorAll("#voiceList li")].map((li) => li.dataset.voice));

    await page.goto(url + "/");
    // Without the key the page says why it has no models (and Chromium logs the 401s); with it, no errors.
    await waitText("#status", /Cannot load models/, 10000);
    check(/API key/.test(await text("#status")), "without a key: " + await text("#status"));
    check(errors.length > 0 && errors.every((e) => e.includes("401")), "errors before the key: " + errors.join("; "));
    errors.length = 0;
    await page.fill("#apikey", key);
    await page.dispatchEvent("#apikey", "change");
    await page.waitForFunction(() => document.querySelectorAll("#voice option").length > 0, null, { timeout: 10000 });
    check(await ink() === 0, "the waveform is drawn before anything was spoken");
    // The plain audio stream first (its reads are what the checks below count); captions, which
    // come as Server-Sent Events, after it.
    check(await page.isChecked("#captionsOn"), "captions are not on by default");
    await page.uncheck("#captionsOn");
    check((await listed()).length === 0 && await page.isVisible("#voicesEmpty"), "a fresh server lists registered voices");
    check(await page.isVisible("#historyEmpty"), "the empty history does not say so");

    // A voice from an uploaded clip, on the Base model.
    const base = await page.evaluate(() => [...document.querySelectorAll("#model option")].map((o) => o.value).find((v) => v.includes("Base")));
    await page.selectOption("#model", base);
    await page.click("#createVoice");
    check(/Give a name and a clip/.test(await text("#voiceStatus")), "creating a voice without a clip is not refused in the page");
    await page.fill("#voiceName", "browser_voice");
    await page.setInputFiles("#voiceFile", clip);
    await page.click("#createVoice");
    await waitText("#voiceStatus", /Created voice|Error/);
    out.voice_status = await text("#voiceStatus");
    check(out.voice_status.startsWith("Created voice 'browser_voice'"), out.voice_status);
    await page.waitForFunction(() => document.querySelector('#voiceList li[data-voice="browser_voice"]'), null, { timeout: 10000 });
    check((await page.evaluate(() => window.talkbox.lastUpload)).name === "en_3p5s.wav", "a WAV file was not sent as it is");

    // A file the server does not read (by its name) is decoded in the page and sent as WAV; one the
    // browser cannot decode either is refused there.
    await page.fill("#voiceName", "converted_voice");
    await page.setInputFiles("#voiceFile", { name: "reference.m4a", mimeType: "audio/mp4", buffer: fs.readFileSync(clip) });
    await page.click("#createVoice");
    await waitText("#voiceStatus", /Created voice|Error/);
    check((await text("#voiceStatus")).startsWith("Created voice 'converted_voice'"), await text("#voiceStatus"));
    out.converted_upload = await page.evaluate(() => window.talkbox.lastUpload);
    check(out.converted_upload.name === "reference.wav" && out.converted_upload.type === "audio/wav", "not converted: " + JSON.stringify(out.converted_upload));
    await page.fill("#voiceName", "noise_voice");
    await page.setInputFiles("#voiceFile", { name: "noise.m4a", mimeType: "audio/mp4", buffer: Buffer.from("not audio at all") });
    await page.click("#createVoice");
    await waitText("#voiceStatus", /Created voice 'noise|Error/);
    out.undecodable = await text("#voiceStatus");
    check(out.undecodable === "Error: this browser cannot decode 'noise.m4a' (send WAV, FLAC, Ogg or MP3)", out.undecodable);

    // A voice recorded from the (fake) microphone: WebM from MediaRecorder, sent as WAV.
    await page.fill("#voiceName", "mic_voice");
    await page.click("#record");
    await waitText("#clipInfo", /Recording\.\.\. (1\.[5-9]|[2-9]\.\d) s/, 10000);
    check(await page.getAttribute("#record", "aria-pressed") === "true", "the record button does not show that it records");
    await page.click("#record");
    await waitText("#clipInfo", /Using the recording|Cannot use/, 10000);
    out.recording = await text("#clipInfo");
    check(out.recording.startsWith("Using the recording"), out.recording);
    check(await page.isVisible("#recording"), "the recording has no player to hear it back");
    await page.click("#createVoice");
    await waitText("#voiceStatus", /Created voice 'mic_voice'|Error/);
    out.mic_voice_status = await text("#voiceStatus");
    check(out.mic_voice_status.startsWith("Created voice 'mic_voice'"), out.mic_voice_status);
    out.recorded_upload = await page.evaluate(() => window.talkbox.lastUpload);
    check(out.recorded_upload.name === "recording.wav" && out.recorded_upload.type === "audio/wav", "recording sent as " + JSON.stringify(out.recorded_upload));
    await page.waitForFunction(() => [...document.querySelectorAll("#voice option")].some((o) => o.value === "mic_voice"), null, { timeout: 10000 });
    out.voices_listed = await listed();
    check(out.voices_listed.join() === "browser_voice,converted_voice,mic_voice", "voice list: " + out.voices_listed.join());

    // Speech with the uploaded voice, by the button: streamed, played, drawn while it streams.
    await page.selectOption("#voice", "browser_voice");
    await page.fill("#text", "Hello from headless Chromium. The page plays this while it streams.");
    await page.fill("#seed", "9");
    await page.click("#speak");
    await page.waitForFunction(() => window.talkbox.done || window.talkbox.error, null, { timeout: 20000 });
    let stats = await page.evaluate(() => window.talkbox);
    check(!stats.error, "page error: " + stats.error);
    await page.waitForFunction(() => window.talkbox.buffersPlayed > 0, null, { timeout: 10000 });
    stats = await page.evaluate(() => window.talkbox);
    Object.assign(out, stats);
    out.wave_ink = await ink();
    check(out.wave_ink > 100, "the waveform canvas is blank after speaking (" + out.wave_ink + " pixels)");
    const seen = stats.wavePeaksWhileStreaming;
    check(stats.chunks === Math.ceil(stats.bytes / PIECE_BYTES), stats.chunks + " reads of " + stats.bytes + " bytes: the stream was not paced");
    // Each piece is drawn before the one after the next arrives (by an animation frame, or at the
    // next piece when no frame came between), whatever the frame rate: so at least half of the
    // pieces but the last show up as distinct drawn lengths while the audio streams.
    check(seen.length >= Math.ceil((stats.chunks - 1) / 2) && seen.length >= 2 && seen[0] < stats.wavePeaks,
          "the waveform was not drawn while the audio streamed: " + JSON.stringify(seen) + " in " + stats.chunks + " reads");
    check(stats.wavePeaks === Math.floor(stats.samplesScheduled / 240), "the waveform does not cover the audio");
    out.progress = await text("#progress");
    check(/^Done: \d+\.\d s generated · real-time factor \d+\.\d\d · first audio after \d+ ms$/.test(out.progress), "progress line: " + out.progress);
    check(Math.abs(parseFloat(out.progress.slice(6)) - stats.samplesScheduled / 24000) < 0.051, "the progress line's seconds are not the audio's");
    out.status = await text("#status");
    await page.waitForSelector('#history li[data-clip="1"]', { timeout: 5000 });

    // Enter alone is a new line; Ctrl+Enter in the text speaks (with the recorded voice).
    await page.selectOption("#voice", "mic_voice");
    await page.focus("#text");
    await page.keyboard.press("End");
    await page.keyboard.press("Enter");
    await page.keyboard.type("Spoken by the keyboard.");
    check(await page.evaluate(() => window.talkbox.requests) === 1, "Enter alone started a request");
    await page.keyboard.press("Control+Enter");
    await page.waitForFunction(() => window.talkbox.requests === 2 && (window.talkbox.done || window.talkbox.error), null, { timeout: 20000 });
    const second = await page.evaluate(() => window.talkbox);
    check(!second.error, "Ctrl+Enter: " + second.error);
    check((await page.inputValue("#text")).endsWith("\nSpoken by the keyboard."), "Ctrl+Enter changed the text");
    out.second_bytes = second.bytes;

    // The history: newest first, each clip playable and downloadable as the WAV of what streamed.
    await page.waitForSelector('#history li[data-clip="2"]', { timeout: 5000 });
    out.history = await page.evaluate(() => [...document.querySelectorAll("#history li")].map((li) => li.dataset.clip));
    check(out.history.join() === "2,1", "history: " + out.history.join());
    check(!(await page.isVisible("#historyEmpty")), "the history still says it is empty");
    const [download] = await Promise.all([page.waitForEvent("download"), page.click('#history li[data-clip="1"] a')]);
    const wav = fs.readFileSync(await download.path());
    out.download_name = download.suggestedFilename();
    out.download_bytes = wav.length;
    check(wav.subarray(0, 4).toString() === "RIFF" && wav.length === 44 + stats.bytes,
          "the download is not clip 1's audio as WAV (" + wav.length + " bytes for " + stats.bytes + " received)");
    check(out.download_name === "talkbox-1-browser_voice.wav", "download name " + out.download_name);
    out.replay_seconds = await page.evaluate(async () => {
      const a = document.querySelector('#history li[data-clip="2"] audio');
      await a.play();
      a.pause();
      return a.duration;
    });
    check(Math.abs(out.replay_seconds - second.bytes / 2 / 24000) < 0.01, "clip 2's player holds " + out.replay_seconds + " s");

    // Stop during a long text (spoken by Cmd+Enter): the part received so far is kept in the
    // history, marked as stopped.
    await page.selectOption("#voice", "browser_voice");
    await page.fill("#text", "This sentence is one of many. ".repeat(40));
    await page.press("#text", "Meta+Enter");
    await page.waitForFunction(() => window.talkbox.requests === 3 && window.talkbox.samplesScheduled > 0, null, { timeout: 20000 });
    await page.click("#stop");
    await page.waitForFunction(() => window.talkbox.error || window.talkbox.done, null, { timeout: 10000 });
    out.stopped = await page.evaluate(() => window.talkbox.error);
    check(out.stopped === "stopped" && await text("#status") === "Stopped.", "Stop: " + out.stopped + ", " + await text("#status"));
    await page.waitForSelector('#history li[data-clip="3"]', { timeout: 5000 });
    check(/\(stopped\)/.test(await text('#history li[data-clip="3"]')), "the stopped clip is not marked as stopped");
    check(await page.isEnabled("#speak") && !(await page.isEnabled("#stop")), "the buttons after Stop");

    // SSML with captions. Each caption comes as a speech.segment event before its audio, so it is
    // listed while the audio still streams; as playback reaches each one it is highlighted, and
    // once the clip has played none is. The breaks make each caption play for over 1.5 s, so that
    // a busy machine's slow animation frames still see every one.
    const custom = await page.evaluate(() => [...document.querySelectorAll("#model option")].map((o) => o.value).find((v) => v.includes("CustomVoice")));
    await page.selectOption("#model", custom);
    await page.selectOption("#voice", "ryan");
    await page.check("#captionsOn");
    await page.check('input[name="inputFormat"][value="ssml"]');
    check(await text("#textLabel") === "SSML document" && /<break/.test(await text("#formatHelp")), "the SSML choice does not say what to write");
    check(!(await page.isVisible("#castFields")), "the cast is offered for SSML");
    const sentences = ["One sentence here.", "A second one.", "And the third."];
    await page.fill("#text", "<speak>" + sentences.map((x) => "<s>" + x + '</s><break time="1500ms"/>').join("") + "</speak>");
    await page.fill("#seed", "3");
    const requestsBefore = await page.evaluate(() => window.talkbox.requests);
    await page.click("#speak");
    await page.waitForFunction((n) => window.talkbox.requests === n && (window.talkbox.done || window.talkbox.error), requestsBefore + 1, { timeout: 20000 });
    const ssml = await page.evaluate(() => window.talkbox);
    check(!ssml.error, "SSML with captions: " + ssml.error);
    out.captions = ssml.captions;
    check(ssml.captions.join("|") === sentences.join("|"), "captions: " + JSON.stringify(ssml.captions));
    check(ssml.captionReads[0] < ssml.chunks, "the first caption came with the last of " + ssml.chunks + " reads, not while the audio streamed");
    out.caption_lines = await page.evaluate(() => [...document.querySelectorAll("#captions li")].map((li) => [...li.children].map((c) => c.textContent)));
    check(out.caption_lines.length === 3 && out.caption_lines.every((l, i) => l[1] === "ryan" && l[2] === sentences[i]) &&
          out.caption_lines[0][0] === "0:00.0", "caption lines: " + JSON.stringify(out.caption_lines));
    // While the clip plays, the highlighted line is the caption reached last, marked for screen readers too.
    const lit = await page.waitForFunction(() => {
      const li = document.querySelector("#captions li.current"), seen = window.talkbox.captionsHighlighted;
      return li && { index: Number(li.dataset.index), aria: li.getAttribute("aria-current"), last: seen[seen.length - 1] };
    }, null, { timeout: 20000, polling: 50 });
    const shown = await lit.jsonValue();
    check(shown.aria === "true" && shown.index === shown.last, "the highlighted caption: " + JSON.stringify(shown));
    await page.waitForFunction(() => window.talkbox.captionsHighlighted.includes(2) && !document.querySelector("#captions li.current"), null,
                               { timeout: 30000, polling: 50 });
    out.highlighted = await page.evaluate(() => window.talkbox.captionsHighlighted);
    check(out.highlighted.join() === "0,1,2", "captions highlighted in the order " + out.highlighted.join());

    // A dialogue script with its cast: a malformed cast is refused in the page; the captions name each speaker's voice.
    await page.check('input[name="inputFormat"][value="dialogue"]');
    check(await page.isVisible("#castFields") && /ryan/.test(await text("#castHelp")), "the dialogue choice does not offer the cast and its voices");
    await page.fill("#text", "ALICE: Good morning.\nBOB: Morning to you.");
    await page.fill("#cast", "alice=vivian, bob");
    await page.click("#speak");
    out.bad_cast = await text("#status");
    check(out.bad_cast === "Cast: cast entry 'bob': expected NAME=voice (e.g. alice=vivian)", "bad cast: " + out.bad_cast);
    check(await page.evaluate(() => window.talkbox.requests) === requestsBefore + 1, "a malformed cast was sent");
    await page.fill("#cast", "alice=vivian, bob=ryan");
    await page.click("#speak");
    await page.waitForFunction((n) => window.talkbox.requests === n && (window.talkbox.done || window.talkbox.error), requestsBefore + 2, { timeout: 20000 });
    check(!(await page.evaluate(() => window.talkbox.error)), "dialogue: " + await page.evaluate(() => window.talkbox.error));
    out.dialogue_captions = await page.evaluate(() => [...document.querySelectorAll("#captions li")].map((li) => li.querySelector(".who").textContent + ": " + li.lastChild.textContent));
    check(out.dialogue_captions.join("|") === "vivian: Good morning.|ryan: Morning to you.", "dialogue captions: " + out.dialogue_captions.join("|"));
    await page.check('input[name="inputFormat"][value="text"]');

    // Voice conversion: the reference clip into the Chatterbox model's built-in voice, as long as
    // the clip to a speech token or two (25 a second), playable and downloadable.
    check(await page.isVisible("#vcSection"), "no voice conversion although a loaded model converts voices");
    await page.click("#convert");
    check(await text("#vcStatus") === "Choose a recording and a voice.", "converting nothing: " + await text("#vcStatus"));
    await page.selectOption("#vcVoice", { label: "builtin" });
    await page.setInputFiles("#vcFile", clip);
    await page.click("#convert");
    await waitText("#vcStatus", /Converted|Error/);
    out.conversion = await text("#vcStatus");
    check(/^Converted 'en_3p5s\.wav' into builtin: \d+\.\d s\.$/.test(out.conversion), out.conversion);
    const clipSeconds = fs.readFileSync(clip).readUInt32LE(40) / 2 / 24000;  // the fixture: 16-bit mono at 24 kHz, a 44-byte header
    out.converted_seconds = (await page.evaluate(() => window.talkbox.lastConversion)).seconds;
    check(out.converted_seconds <= clipSeconds + 1e-6 && out.converted_seconds > clipSeconds - 0.081,
          "converted " + out.converted_seconds + " s of a " + clipSeconds + " s clip");
    check(await page.isVisible("#vcResult") && await page.isVisible("#vcDownload"), "the converted audio has no player or download");

    // Deleting a voice from the list: confirmed, gone from the list and the voice menu.
    await page.click('button[aria-label="Delete voice browser_voice"]');
    await waitText("#voicesStatus", /Deleted voice|Cannot delete/);
    out.delete_status = await text("#voicesStatus");
    check(out.delete_status === "Deleted voice 'browser_voice'.", out.delete_status);
    check(dialogs.length === 1 && dialogs[0].includes("browser_voice"), "no confirmation before deleting: " + dialogs.join());
    // The status shows before the page reloads its lists, and the voice menu may never have held
    // the voice (the chosen model may not take it): wait for the list itself.
    await page.waitForFunction(() => ![...document.querySelectorAll("#voiceList li, #voice option")].some((e) => (e.dataset.voice || e.value) === "browser_voice"), null, { timeout: 5000 });
    out.voices_after_delete = await listed();
    check(out.voices_after_delete.join() === "converted_voice,mic_voice", "after delete: " + out.voices_after_delete.join());

    // Where the browser offers no microphone (a page on plain http that is not localhost), the
    // record button says why instead of failing.
    const insecure = await browser.newPage();
    insecure.on("pageerror", (e) => errors.push("insecure page: " + String(e)));
    await insecure.addInitScript(() => Object.defineProperty(Navigator.prototype, "mediaDevices", { get: () => undefined }));
    await insecure.goto(url + "/");
    await insecure.click("#record");
    out.no_microphone = await insecure.textContent("#clipInfo");
    check(/only on https or localhost/.test(out.no_microphone), "without mediaDevices: " + out.no_microphone);
    await insecure.close();

    // Every control has an accessible name.
    out.unnamed = await page.evaluate(() => {
      const bad = [];
      for (const e of document.querySelectorAll("input, select, textarea")) if (!e.labels.length && !e.getAttribute("aria-label")) bad.push(e.id);
      for (const e of document.querySelectorAll("button, a")) if (!(e.getAttribute("aria-label") || e.textContent.trim())) bad.push(e.outerHTML);
      for (const e of document.querySelectorAll("canvas, audio")) if (!e.getAttribute("aria-label")) bad.push(e.outerHTML);
      return bad;
    });
    check(out.unnamed.length === 0, "controls without an accessible name: " + out.unnamed.join(", "));
    check(errors.length === 0, "page errors: " + errors.join("; "));
    check(foreign.length === 0, "requests to other origins: " + foreign.join(", "));
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(out));
}

main().catch((e) => { console.error("FAIL:", e && e.stack ? e.stack : e); process.exit(1); });
