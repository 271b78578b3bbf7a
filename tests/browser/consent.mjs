// The owner approves an OAuth client on wazap's consent page in real headless Chromium, as a
// person would after an AI client opened the authorization URL in their browser: a fresh
// browser (no session) opens the URL, is sent to the login page, logs in, lands on the consent
// page, reads what the client claims (its name, where the code goes, what it may access), keeps
// the defaults (all chats, sends nowhere, 30 days) and clicks Approve. The page then sends the
// browser to the client's redirect URI; that navigation is answered here (nothing listens
// there) and its URL, which carries the code, is the one line this script prints:
//   {"callback": URL, "claims": {dt: dd, …}, "defaults": {"days", "read", "send"}}
// Launched by the Rust e2e tests `compat::oauth`, which pass:
//   WAZAP_AUTHORIZE  the authorization URL the client asked the owner to open
//   WAZAP_CALLBACK   the client's redirect URI (the navigation to it is intercepted)
//   WAZAP_PASSWORD   the owner password (never printed)
//   WAZAP_ARTIFACTS  where the consent page's screenshot goes
//   WAZAP_SHOT       the screenshot's file name, without .png
// The code in the printed URL is a secret: the Rust side records it for the leak scan.
import { mkdirSync, rmSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const authorize = process.env.WAZAP_AUTHORIZE;
const callback = process.env.WAZAP_CALLBACK;
const password = process.env.WAZAP_PASSWORD;
const artifacts = process.env.WAZAP_ARTIFACTS;
const shotName = process.env.WAZAP_SHOT || "oauth-consent";
if (!authorize || !callback || !password || !artifacts) {
  console.error("missing WAZAP_AUTHORIZE, WAZAP_CALLBACK, WAZAP_PASSWORD or WAZAP_ARTIFACTS");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });
const profile = mkdtempSync(join(tmpdir(), "wazap-chromium-"));

function check(cond, what) {
  if (!cond) throw new Error("check failed: " + what);
}

const toClient = (url) => url.href.startsWith(callback);

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
  // Nothing listens at the client's loopback redirect URI: the browser is answered here, the
  // way the client's own little callback server would answer it.
  await context.route(toClient, (route) =>
    route.fulfill({
      status: 200,
      contentType: "text/html",
      body: "<!doctype html><title>Back at the client</title><p>You can close this window.</p>",
    }));
  const page = await context.newPage();
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));

  // No session: the authorization endpoint sends the browser to the consent page, which sends
  // it to log in first, and back afterwards.
  await page.goto(authorize);
  const login = new URL(page.url());
  check(login.pathname === "/login", "sent to the login page, not " + login.pathname);
  const next = login.searchParams.get("next") || "";
  check(next.startsWith("/oauth/consent?request="), "the login page returns to the consent page");
  await page.fill("#password", password);
  await page.click("#login-form button[type=submit]");
  await page.waitForURL((url) => url.pathname === "/oauth/consent");
  await page.waitForSelector("#consent-form");
  check(new URL(page.url()).search === next.slice("/oauth/consent".length), "the same request");

  // What the client claims, as the page labels it.
  const claims = await page.$$eval("dl.claims dt", (dts) =>
    Object.fromEntries(dts.map((dt) => [dt.textContent.trim(), dt.nextElementSibling.textContent.trim()])));
  const defaults = await page.evaluate(() => ({
    days: document.querySelector("#cs-days").value,
    read: document.querySelector('input[name="read"]:checked').value,
    send: document.querySelector('input[name="send"]:checked').value,
    name: document.querySelector("#cs-name").value,
  }));
  await page.screenshot({ path: join(artifacts, shotName + ".png"), fullPage: true });

  // Approve with the defaults; the page sends the browser to the client with the code.
  await page.click("#approve");
  await page.waitForURL(toClient);
  check(pageErrors.length === 0, "no script errors: " + pageErrors.join("; "));
  console.log(JSON.stringify({ callback: page.url(), claims, defaults }));
} catch (e) {
  failed = true;
  console.error(String(e && e.stack || e));
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
