// Links a simulated phone from the owner dashboard in headless Chromium, as a person would:
// log in, Account → "Show a QR code", then read the code's text from the page and print it
// (`QR <text>`) for the Rust e2e test `network::linking`, whose simulated phone scans it; then
// wait until the page says the account is live. Environment: WAZAP_DASHBOARD, WAZAP_PASSWORD,
// WAZAP_ARTIFACTS (as dashboard.mjs).
import { mkdirSync, rmSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const dashboard = process.env.WAZAP_DASHBOARD;
const password = process.env.WAZAP_PASSWORD;
const artifacts = process.env.WAZAP_ARTIFACTS;
if (!dashboard || !password || !artifacts) {
  console.error("missing WAZAP_DASHBOARD, WAZAP_PASSWORD or WAZAP_ARTIFACTS");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });
const profile = mkdtempSync(join(tmpdir(), "wazap-chromium-"));

function check(cond, what) {
  if (!cond) throw new Error("check failed: " + what);
}

const context = await chromium.launchPersistentContext(profile, {
  executablePath: "/usr/bin/chromium",
  headless: true,
  viewport: { width: 1200, height: 900 },
  args: [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
  ],
});
let failed = false;
try {
  context.setDefaultTimeout(15000);
  const page = await context.newPage();
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  await page.goto(dashboard + "/login");
  await page.fill("#password", password);
  await page.click("#login-form button[type=submit]");
  await page.waitForURL("**/connections");

  await page.goto(dashboard + "/account");
  check((await page.textContent("#account-state")).trim() === "unpaired", "unpaired at first");
  // An unlinked worker may already show a QR; else ask for one (the page then reloads itself).
  const ask = await page.$('button.account-action[data-action="pair_with_qr"]');
  if (ask) await ask.click();
  // The QR shows once WhatsApp (here: the test network) offered one.
  let qr = null;
  for (let i = 0; i < 100 && !qr; i++) {
    await page.waitForLoadState();
    qr = await page.$("#qr-text");
    if (!qr) { await page.waitForTimeout(100); await page.reload(); }
  }
  check(qr, "a QR code is shown");
  check(await page.$("figure.qr svg"), "drawn as an image too");
  await page.screenshot({ path: join(artifacts, "10-link-qr.png"), fullPage: true });
  console.log("QR " + (await qr.textContent()).trim());

  let state = "";
  for (let i = 0; i < 150 && state !== "live"; i++) {
    await page.waitForTimeout(100);
    await page.reload();
    state = (await page.textContent("#account-state")).trim();
  }
  check(state === "live", "live after the phone scanned (last: " + state + ")");
  await page.screenshot({ path: join(artifacts, "11-linked.png"), fullPage: true });
  check(pageErrors.length === 0, "no script errors: " + pageErrors.join("; "));
  console.log("LINKED live");
} catch (e) {
  failed = true;
  console.error(String(e && e.stack || e));
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
