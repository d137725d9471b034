// Lighthouse's accessibility audit of the app's rendered pages, one browser for every run.
//
// Streamlit draws a page in the browser after the HTML has loaded (over its websocket), so a plain
// `lighthouse URL` may audit the empty shell. Here Lighthouse's navigation is started by a
// function that loads the page and waits until the page's own element is drawn and the script has
// finished; Lighthouse then waits for load as usual and audits that page.
//
// Input (stdin, JSON): {lighthouse: folder of node_modules, chrome: path, args: [flags],
//   runs: [{name, url, ready, formFactor: "desktop" | "mobile"}]}
// Output (stdout, JSON): one entry a run: {name, formFactor, score, failing: [{id, title, nodes}],
//   applicable: [audit ids that found something to check], h1, version}
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const input = JSON.parse(readFileSync(0, "utf8"));
const modules = input.lighthouse;
const require = createRequire(join(modules, "package.json"));
const puppeteer = require("puppeteer-core");
const lh = await import(pathToFileURL(join(modules, "lighthouse", "core", "index.js")).href);

const SCRIPT_DONE = '[data-testid="stApp"][data-test-script-state="notRunning"]';
const WAIT_MS = input.waitMs ?? 90000;

function config(formFactor) {
  const base = formFactor === "desktop" ? lh.desktopConfig : lh.defaultConfig;
  return {
    ...base,
    settings: {
      ...(base.settings ?? {}),
      onlyCategories: ["accessibility"],
      disableFullPageScreenshot: true,
      skipAboutBlank: true,
      // the load function has already waited for the drawn page: no extra quiet time needed
      pauseAfterFcpMs: 0,
      pauseAfterLoadMs: 0,
      networkQuietThresholdMs: 250,
      cpuQuietThresholdMs: 250,
    },
  };
}

const browser = await puppeteer.launch({
  executablePath: input.chrome,
  args: input.args,
  headless: true,
  defaultViewport: null,
});
const out = [];
try {
  for (const run of input.runs) {
    const page = await browser.newPage();
    const load = async () => {
      await page.goto(run.url);
      await page.waitForSelector(run.ready, { timeout: WAIT_MS });
      await page.waitForSelector(SCRIPT_DONE, { timeout: WAIT_MS });
      await new Promise((r) => setTimeout(r, 300)); // the page's script, on the next frame
    };
    const result = await lh.navigation(page, load, { config: config(run.formFactor) });
    const lhr = result.lhr;
    const category = lhr.categories.accessibility;
    const failing = category.auditRefs
      .map((ref) => lhr.audits[ref.id])
      .filter((a) => a.scoreDisplayMode === "binary" && a.score !== null && a.score < 1)
      .map((a) => ({
        id: a.id,
        title: a.title,
        nodes: (a.details?.items ?? []).slice(0, 3).map((i) => i.node?.snippet ?? ""),
      }));
    const applicable = category.auditRefs
      .map((ref) => lhr.audits[ref.id])
      .filter((a) => a.scoreDisplayMode === "binary")
      .map((a) => a.id);
    const h1 = await page.evaluate(() => document.querySelector("h1")?.innerText ?? null);
    out.push({
      name: run.name,
      formFactor: run.formFactor,
      score: category.score,
      failing,
      applicable,
      h1,
      version: lhr.lighthouseVersion,
      warnings: lhr.runWarnings,
    });
    await page.close();
  }
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(out));
