// Headless Chromium (playwright-core, the system's /usr/bin/chromium) on the page served at /:
//   node browser_page.cjs BASE_URL API_KEY REFERENCE_CLIP
// Creates a voice from the clip through the page, synthesises a sentence with it, and checks that
// the streamed audio was received, scheduled and played, and that the download is a WAV of it.
// Prints one JSON line; exit 0 = pass.
"use strict";
const fs = require("fs");
const { chromium } = require("playwright-core");

async function main() {
  const [url, key, clip] = process.argv.slice(2);
  const browser = await chromium.launch({
    executablePath: process.env.TALKBOX_CHROMIUM || "/usr/bin/chromium",
    args: ["--no-sandbox", "--autoplay-policy=no-user-gesture-required"],
  });
  const out = {};
  try {
    const page = await browser.newPage();
    const errors = [];
    page.on("pageerror", (e) => errors.push(String(e)));
    await page.goto(url + "/");
    await page.fill("#apikey", key);
    await page.dispatchEvent("#apikey", "change");
    await page.waitForFunction(() => document.querySelectorAll("#voice option").length > 0, null, { timeout: 10000 });

    // A voice from the reference clip, on the Base model.
    const base = await page.evaluate(() => [...document.querySelectorAll("#model option")].map((o) => o.value).find((v) => v.includes("Base")));
    await page.selectOption("#model", base);
    await page.fill("#voiceName", "browser_voice");
    await page.setInputFiles("#voiceFile", clip);
    await page.click("#createVoice");
    await page.waitForFunction(() => /Created voice|Error/.test(document.getElementById("voiceStatus").textContent), null, { timeout: 20000 });
    out.voice_status = await page.textContent("#voiceStatus");
    if (!out.voice_status.startsWith("Created voice")) throw new Error(out.voice_status);
    await page.waitForFunction(() => [...document.querySelectorAll("#voice option")].some((o) => o.value === "browser_voice"), null, { timeout: 10000 });
    await page.selectOption("#voice", "browser_voice");

    await page.fill("#text", "Hello from headless Chromium. The page plays this while it streams.");
    await page.fill("#seed", "9");
    await page.click("#speak");
    await page.waitForFunction(() => window.talkbox.done || window.talkbox.error, null, { timeout: 20000 });
    let stats = await page.evaluate(() => window.talkbox);
    if (stats.error) throw new Error("page error: " + stats.error);
    await page.waitForFunction(() => window.talkbox.buffersPlayed > 0, null, { timeout: 10000 });
    stats = await page.evaluate(() => window.talkbox);
    Object.assign(out, stats);
    out.status = await page.textContent("#status");

    const [download] = await Promise.all([page.waitForEvent("download"), page.click("#download")]);
    const wav = fs.readFileSync(await download.path());
    out.download_bytes = wav.length;
    if (wav.subarray(0, 4).toString() !== "RIFF" || wav.length !== 44 + stats.bytes) {
      throw new Error("the download is not the received audio as WAV (" + wav.length + " bytes for " + stats.bytes + " received)");
    }
    if (errors.length) throw new Error("page errors: " + errors.join("; "));
  } finally {
    await browser.close();
  }
  console.log(JSON.stringify(out));
}

main().catch((e) => { console.error("FAIL:", e && e.stack ? e.stack : e); process.exit(1); });
