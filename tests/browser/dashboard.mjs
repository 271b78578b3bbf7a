// Drives the owner dashboard in real headless Chromium, as the owner would: log in, create an
// AI connection and read its token once, use the token against /mcp, pick 3 chats with search
// and check boxes and save, hit "changed elsewhere" from a second tab, give a second connection
// a read scope of two accounts by picking a chat of each by name (saved, reloaded, still
// picked), see a refused send on the sends page, revoke, and see the token stop working.
// Launched by the Rust e2e test `owner::browser`, which passes:
//   WAZAP_DASHBOARD  listener B's origin (http://127.0.0.1:PORT)
//   WAZAP_MCP_URL    listener A's /mcp
//   WAZAP_PASSWORD   the owner password
//   WAZAP_ARTIFACTS  where screenshots go
//   WAZAP_SENT_TEXTS the texts an agent sent or tried to send, one a line (never shown)
// and checks the exit code and the `KEY value` lines printed on stdout.
import { mkdirSync, rmSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const dashboard = process.env.WAZAP_DASHBOARD;
const mcpUrl = process.env.WAZAP_MCP_URL;
const password = process.env.WAZAP_PASSWORD;
const artifacts = process.env.WAZAP_ARTIFACTS;
const sentTexts = (process.env.WAZAP_SENT_TEXTS || "").split("\n").filter(Boolean);
if (!dashboard || !mcpUrl || !password || !artifacts) {
  console.error("missing WAZAP_DASHBOARD, WAZAP_MCP_URL, WAZAP_PASSWORD or WAZAP_ARTIFACTS");
  process.exit(2);
}
mkdirSync(artifacts, { recursive: true });
const profile = mkdtempSync(join(tmpdir(), "wazap-chromium-"));

function report(key, value) {
  console.log(key + " " + value);
}

function check(cond, what) {
  if (!cond) throw new Error("check failed: " + what);
}

// list_chats through /mcp: the worker authorises it (revocation, current revision), unlike
// tools/list, which the gateway answers alone. "ok", the tool error's code, or "http:<status>".
async function mcpRead(token) {
  const r = await fetch(mcpUrl, {
    method: "POST",
    headers: {
      "Authorization": "Bearer " + token,
      "Content-Type": "application/json",
      "Accept": "application/json, text/event-stream",
    },
    body: JSON.stringify({
      jsonrpc: "2.0", id: 1, method: "tools/call",
      params: { name: "list_chats", arguments: {} },
    }),
  });
  if (r.status !== 200) return "http:" + r.status;
  const body = await r.json();
  if (!body.result?.isError) return "ok";
  try { return JSON.parse(body.result.content[0].text).error.code; } catch (_) { return "error"; }
}

async function shot(page, name) {
  await page.screenshot({ path: join(artifacts, name + ".png"), fullPage: true });
}

// A persistent context on a fresh profile directory is how playwright takes --user-data-dir.
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
  page.on("dialog", (d) => d.accept());
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));

  // A stranger is sent to the login page; a wrong password is refused.
  await page.goto(dashboard + "/connections");
  check(page.url().endsWith("/login"), "redirected to /login");
  await page.fill("#password", "not the password");
  await page.click("#login-form button[type=submit]");
  await page.waitForSelector("#status.error");
  await shot(page, "01-login-refused");
  await page.fill("#password", password);
  await page.click("#login-form button[type=submit]");
  await page.waitForURL("**/connections");
  report("STEP", "logged-in");

  // Create a connection; its token is shown once.
  await page.fill("#c-name", "browser agent");
  await page.click("#create-form button[type=submit]");
  await page.waitForSelector("#token-box:not([hidden])");
  const token = (await page.textContent("#new-token")).trim();
  check(token.split(".").length === 3, "a JWT is shown");
  await shot(page, "02-connection-created");
  report("TOKEN", token);
  const used = await mcpRead(token);
  report("MCP_READ", used);
  check(used === "ok", "the token works against /mcp");

  // The token is not shown again.
  await page.reload();
  check(!(await page.content()).includes(token), "token shown once only");
  await shot(page, "03-connections");
  await page.click('tr:has-text("browser agent") a:has-text("Permissions")');
  await page.waitForURL("**/connections/conn_*");
  const editorUrl = page.url();
  const connection = editorUrl.split("/").pop();
  report("CONNECTION", connection);

  // A second tab opens the same editor before the first one saves.
  const tab2 = await context.newPage();
  tab2.on("dialog", (d) => d.accept());
  await tab2.goto(editorUrl);
  await tab2.waitForSelector("#chat-list li", { state: "attached" });

  // Pick 3 chats with search and check boxes; the count includes chats off the page.
  await page.check('#mode input[value="selected"]');
  await page.waitForSelector("#chat-list li");
  await page.fill("#chat-search", "Alpha");
  await page.waitForFunction(() => {
    const items = Array.from(document.querySelectorAll("#chat-list li"));
    return items.length === 2 && items.every((li) => li.textContent.includes("Alpha"));
  });
  for (const box of await page.$$("#chat-list input[type=checkbox]")) await box.check();
  await page.fill("#chat-search", "Beta Three");
  await page.waitForFunction(() => {
    const items = Array.from(document.querySelectorAll("#chat-list li"));
    return items.length === 1 && items[0].textContent.includes("Beta Three");
  });
  await page.check("#chat-list input[type=checkbox]");
  await page.fill("#chat-search", "Filler");
  await page.waitForFunction(() => document.querySelector("#page-info").textContent.includes("of"));
  const count = (await page.textContent("#selected-count")).trim();
  report("SELECTED_COUNT", count);
  check(count === "3", "3 chats counted while none is on the loaded page");
  await page.click("#save-permission");
  await page.waitForSelector("#status.ok");
  report("SAVED", (await page.textContent("#status")).trim());
  await shot(page, "04-permissions-saved");

  // The second tab's view is stale: its save is refused and says so.
  await tab2.check('#mode input[value="all"]');
  await tab2.click("#save-permission");
  await tab2.waitForSelector("#status.error");
  const conflict = (await tab2.textContent("#status")).trim();
  report("CONFLICT", conflict);
  check(/changed elsewhere/i.test(conflict) && /reopen/i.test(conflict), "conflict message");
  await shot(tab2, "05-permissions-conflict");
  await tab2.close();

  // What the server now holds, through the owner API (same session).
  const listed = await page.evaluate(async () => (await fetch("/api/connections")).json());
  const mine = listed.connections.find((c) => c.name === "browser agent");
  report("PERMISSION", mine.send_permission.mode + " " + mine.send_permission.chats.length);

  for (const [path, name] of [["/account", "06-account"], ["/policy", "07-policy"]]) {
    await page.goto(dashboard + path);
    await page.waitForSelector("h1");
    // The work account is offline: every page says so.
    await page.waitForSelector("#accounts-banner:not([hidden])");
    await shot(page, name);
  }
  report("BANNER", (await page.textContent("#accounts-banner")).replace(/\s+/g, " ").trim());
  await page.goto(dashboard + "/account");
  report("WORK_ROW", (await page.textContent('#accounts tr[data-account="work"]')).replace(/\s+/g, " ").trim());

  // Sends and refused attempts, by chat name, never a body.
  await page.goto(dashboard + "/sends");
  await page.waitForSelector("#refused tbody tr");
  report("SENT_ROW", (await page.textContent("#sends tbody tr")).replace(/\s+/g, " ").trim());
  report("REFUSED_ROW", (await page.textContent("#refused tbody tr")).replace(/\s+/g, " ").trim());
  const sendsHtml = await page.content();
  check(sentTexts.length > 0 && sentTexts.every((t) => !sendsHtml.includes(t)), "no body on the sends page");
  await shot(page, "08-sends");

  // The read-scope editor, on a second connection: two accounts, and in each a chat picked by
  // searching its name; saved, reloaded, still picked.
  await page.goto(dashboard + "/connections");
  await page.fill("#c-name", "scoped agent");
  await page.click("#create-form button[type=submit]");
  await page.waitForSelector("#token-box:not([hidden])");
  await page.reload();
  await page.click('tr:has-text("scoped agent") a:has-text("Permissions")');
  await page.waitForURL("**/connections/conn_*");
  report("SCOPED", page.url().split("/").pop());
  await page.check('#scope-accounts input[value="only"]');
  await page.check('fieldset[data-account="work"] input.read-account');
  async function pickByName(account, mode, search, name) {
    await page.check('input[name="rule-' + account + '"][value="' + mode + '"]');
    await page.fill("#scope-" + account + "-chat-search", search);
    await page.waitForFunction(([list, name]) => {
      const items = Array.from(document.querySelectorAll(list + " li"));
      return items.length === 1 && items[0].textContent.includes(name);
    }, ["#scope-" + account + "-chat-list", name]);
    await page.check("#scope-" + account + "-chat-list input[type=checkbox]");
  }
  await pickByName("default", "selected", "beta", "Beta Three");
  await pickByName("work", "all_except", "lead", "Work Lead");
  await shot(page, "10-read-scope-picked");
  await page.click("#save-scope");
  await page.waitForSelector("#status.ok");
  await page.waitForSelector("#token-box:not([hidden])");
  const scopedToken = (await page.textContent("#new-token")).trim();
  report("SCOPED_READ", await mcpRead(scopedToken));
  await page.reload();
  await page.waitForSelector("#scope-work-chat-list li");
  const picked = (account) => page.evaluate((a) => {
    const rule = document.querySelector('fieldset[data-account="' + a + '"]');
    const mode = rule.querySelector('input[type="radio"]:checked').value;
    const boxes = Array.from(rule.querySelectorAll(".chats input:checked")).map((b) => b.closest("li").textContent.trim());
    return mode + " " + rule.querySelector(".picked-names").textContent + " " + boxes.join("|");
  }, account);
  report("SCOPE_DEFAULT", await picked("default"));
  report("SCOPE_WORK", await picked("work"));
  await shot(page, "11-read-scope-reloaded");

  // Revoke: the token stops working at once.
  await page.goto(dashboard + "/connections");
  await page.click('tr:has-text("browser agent") button.revoke');
  await page.waitForSelector("#status.ok");
  await shot(page, "09-revoked");
  const after = await mcpRead(token);
  report("REVOKED_READ", after);
  check(after === "unauthenticated", "revoked token refused");

  check(pageErrors.length === 0, "no script errors: " + pageErrors.join("; "));
  report("RESULT", "ok");
} catch (e) {
  failed = true;
  console.error(String(e && e.stack || e));
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.exit(failed ? 1 : 0);
