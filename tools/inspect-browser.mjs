// Drives the inspector's page in headless Chromium, as a person would: watch it run,
// pause, step, rewind and re-simulate, filter the entities, select one and read who wrote
// what, and look at the game itself (its picture, plots, tree and resources). Saves a
// screenshot per step and prints what it saw; exits 1 if the page did not do what it
// should. Run by tools/inspect-browser.sh (which starts the arena).
//
//   node tools/inspect-browser.mjs URL OUT_DIR

import { createRequire } from "node:module";
import { writeFileSync } from "node:fs";

const require = createRequire(process.env.PLAYWRIGHT_MODULES + "/");
const { chromium } = require("playwright-core");

const [url, out] = process.argv.slice(2);
const seen = {};
let failed = false;
function check(what, ok, detail) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}${detail === undefined ? "" : ": " + detail}`);
  if (!ok) failed = true;
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1180 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  await page.goto(url);
  const text = (sel) => page.locator(sel).innerText();
  const frame = async () => parseInt(await text("#frame"), 10);
  const shot = (name) => page.screenshot({ path: `${out}/${name}.png` });

  // Running: the frame counter moves and the timeline fills.
  await page.waitForFunction(() => document.getElementById("state").textContent === "running");
  const f0 = await frame();
  await page.waitForTimeout(2500);
  const f1 = await frame();
  check("the game runs and the page follows it", f1 > f0, `frame ${f0} -> ${f1}`);
  await shot("1-running");

  // Pause: the counter stops, a checksum shows.
  await page.click("#pause");
  await page.waitForFunction(() => document.getElementById("state").textContent === "paused");
  const p0 = await frame();
  await page.waitForTimeout(700);
  const p1 = await frame();
  seen.paused_checksum = await text("#checksum");
  check("pause stops the frames", p0 === p1, `frame ${p0}, then ${p1}`);
  check("paused: the world's checksum is shown", /^0x[0-9a-f]{16}$/.test(seen.paused_checksum), seen.paused_checksum);
  await shot("2-paused");

  // Step three times: exactly three frames.
  for (let i = 0; i < 3; i++) {
    const before = await frame();
    await page.click("#step");
    await page.waitForFunction((b) => parseInt(document.getElementById("frame").textContent, 10) === b + 1, before);
  }
  const s1 = await frame();
  const stepped = await text("#checksum");
  check("three steps run three frames", s1 === p1 + 3, `frame ${p1} -> ${s1}`);
  await shot("3-stepped");

  // Rewind 10, then step 10: back at the same frame with the same checksum, every
  // re-simulated frame checked identical.
  await page.click("#back10");
  await page.waitForFunction((f) => parseInt(document.getElementById("frame").textContent, 10) === f - 10, s1);
  const rewound = await text("#checksum");
  check("rewind 10 goes back ten frames", (await frame()) === s1 - 10, `frame ${await frame()}, checksum ${rewound}`);
  await shot("4-rewound");
  await page.click("#step10");
  await page.waitForFunction((f) => parseInt(document.getElementById("frame").textContent, 10) === f, s1);
  await page.waitForFunction(() => document.getElementById("resim").textContent.includes("identical"));
  const again = await text("#checksum");
  seen.resim = await text("#resim");
  check("re-simulating forward reproduces the frame bit for bit", again === stepped, `${stepped} vs ${again}`);
  check("the page says the re-simulated frames were identical", seen.resim.includes("10 re-simulated frames identical"), seen.resim);

  // Entities: filter by Health (agents only), select the first, read its components and
  // who wrote them in the last frame.
  await page.click('#filters input[data-name="Health"]');
  await page.waitForFunction(() => {
    const li = document.querySelector("#entity-list li");
    return li && li.textContent.includes("Health");
  });
  seen.entities = await text("#entity-count");
  const allHealth = await page.locator("#entity-list li .types").allInnerTexts();
  check("the filter keeps entities with Health only", allHealth.length > 0 && allHealth.every((t) => t.includes("Health")), `${allHealth.length} listed, ${seen.entities}`);
  const first = page.locator("#entity-list li").first();
  const id = await first.getAttribute("data-id");
  await first.click();
  await page.waitForFunction(() => document.getElementById("provenance").textContent.includes("re-ran the frame"));
  seen.entity = await text("#entity");
  seen.provenance = await text("#provenance");
  check("the entity shows its components as Debug text", /Position\(Vec2\(/.test(seen.entity) && /Health \{ hp:/.test(seen.entity), seen.entity.replace(/\s+/g, " "));
  check("its provenance names the systems that wrote it", /Steer/.test(seen.provenance) && /Integrate/.test(seen.provenance), seen.provenance.replace(/\s+/g, " ").slice(0, 300));
  check("the explain re-run was identical", seen.provenance.includes("identical to the first run"));
  const shown = await page.locator("#sel-id").textContent();
  check("the selected entity is the one clicked", shown === id, `${id}, shown ${shown}`);
  // The game's own views: its picture of the world, plots over the timeline, the
  // parent/child tree and the resources.
  await page.waitForFunction(() => /shapes/.test(document.getElementById("picture-caption").textContent));
  seen.picture = await text("#picture-caption");
  const inked = await page.evaluate(() => {
    const c = document.getElementById("picture");
    const d = c.getContext("2d").getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (d[i + 3] > 0 && !(d[i] === 245 && d[i + 1] === 245 && d[i + 2] === 240)) n++;
    }
    return n;
  });
  check("the world's picture is drawn", inked > 500 && /frame \d+ · \d+ shapes/.test(seen.picture), `${seen.picture}; ${inked} pixels inked`);
  const plots = await page.locator("#plots .plot .name span:first-child").allInnerTexts();
  seen.plots = plots;
  check("plots of the entities and the arena's values", ["entities", "agents", "mean health", "projectiles", "memory bytes"].every((n) => plots.includes(n)), plots.join(", "));
  const meanHealth = await text("#plot-v2");
  check("the mean health plot has a value", /^\d+(\.\d+)?$/.test(meanHealth.trim()), meanHealth);
  await page.waitForFunction(() => document.querySelectorAll("#tree li[data-id]").length > 0);
  seen.tree = await text("#tree-count");
  const firstNode = await page.locator("#tree li[data-id]").first().innerText();
  check("the tree shows ships and their turrets", /roots?/.test(seen.tree) && /children/.test(firstNode), `${seen.tree}: ${firstNode}`);
  seen.resources = await text("#resources");
  check("the resources show Time and the arena's setup", /Time \{/.test(seen.resources) && /ArenaSetup \{/.test(seen.resources), seen.resources.replace(/\s+/g, " "));
  // Hover a frame the ring holds: the picture is that frame's, drawn from the ring.
  const tl = await page.locator("#timeline").boundingBox();
  await page.mouse.move(tl.x + tl.width - 4 * 8 - 2, tl.y + tl.height / 2);
  await page.waitForFunction(() => document.getElementById("picture-caption").textContent.includes("(from the ring)"));
  const hovered = await page.locator("#tip b").first().innerText();
  seen.past_picture = await text("#picture-caption");
  check("hovering a past frame shows its picture from the ring", seen.past_picture.includes(`frame ${hovered} (from the ring)`), `hovered frame ${hovered}: ${seen.past_picture}`);
  await page.mouse.move(0, 0);
  await page.waitForFunction(() => !document.getElementById("picture-caption").textContent.includes("(from the ring)"));
  await shot("6-game");
  await page.screenshot({ path: `${out}/inspector-game.png`, fullPage: true });

  // Hover a frame on the timeline, for the screenshot's tooltip and systems table.
  const box = await page.locator("#timeline").boundingBox();
  await page.mouse.move(box.x + box.width - 30, box.y + box.height / 2);
  await page.waitForTimeout(200);
  await shot("5-entity");
  await page.mouse.move(0, 0);
  await page.waitForTimeout(200);
  await shot("inspector");

  check("no script errors on the page", errors.length === 0, errors.join(" | "));
} finally {
  await browser.close();
}
writeFileSync(`${out}/seen.json`, JSON.stringify(seen, null, 2));
process.exit(failed ? 1 : 0);
