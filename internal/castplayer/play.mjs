// play.mjs FILE: asciinema-player (npm) plays a recording in headless
// Chromium (Debian's, or $CHROMIUM) to its end and prints the final
// screen's rows as JSON: {"lines": [...]}, trailing blanks trimmed.
import fs from "node:fs";
import puppeteer from "puppeteer-core";

const file = process.argv[2];
const dist = new URL("./node_modules/asciinema-player/dist/bundle/", import.meta.url);
const js = fs.readFileSync(new URL("asciinema-player.min.js", dist), "utf8");
const css = fs.readFileSync(new URL("asciinema-player.css", dist), "utf8");
const data = fs.readFileSync(file, "utf8");

const browser = await puppeteer.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
});
try {
  const page = await browser.newPage();
  await page.setContent(`<!doctype html><html><head><style>${css}</style></head><body><div id="p"></div></body></html>`);
  await page.addScriptTag({ content: js });
  const lines = await page.evaluate(async (data) => {
    const player = AsciinemaPlayer.create({ data }, document.getElementById("p"), { autoPlay: true, speed: 100, idleTimeLimit: 0.01 });
    await new Promise((resolve) => {
      player.addEventListener("ended", resolve);
      setTimeout(resolve, 30000);
    });
    await new Promise((r) => setTimeout(r, 200));
    return [...document.querySelectorAll(".ap-line")].map((l) => l.textContent.replace(/\u00a0/g, " ").replace(/\s+$/, ""));
  }, data);
  console.log(JSON.stringify({ lines }));
} finally {
  await browser.close();
}
