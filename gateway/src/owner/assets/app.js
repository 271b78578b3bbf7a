// wazap owner dashboard: the little script behind the server-rendered pages. Every write is a
// JSON POST with the session's CSRF token in the X-CSRF-Token header; nothing is stored in the
// browser beyond the HttpOnly session cookie.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
const $$ = (sel, root = document) => Array.from(root.querySelectorAll(sel));

function say(text, kind = "info") {
  const s = $("#status");
  if (!s) return;
  s.textContent = text;
  s.className = kind;
}

async function api(method, path, body) {
  const meta = $('meta[name="csrf-token"]');
  const headers = { "Accept": "application/json" };
  if (method !== "GET") {
    headers["Content-Type"] = "application/json";
    if (meta) headers["X-CSRF-Token"] = meta.content;
  }
  const r = await fetch(path, {
    method,
    headers,
    credentials: "same-origin",
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  let data = null;
  try { data = await r.json(); } catch (_) { data = null; }
  return { status: r.status, ok: r.ok, data };
}

function failure(res) {
  if (res.status === 409) return "Changed elsewhere — reopen this page and edit again.";
  if (res.status === 401) return "Your session ended; log in again.";
  const e = res.data && res.data.error;
  return e ? e.message : "Request failed (HTTP " + res.status + ").";
}

function pageData() {
  const el = $("#page-data");
  return el ? JSON.parse(el.textContent) : null;
}

function idLines(text) {
  return text.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);
}

function showToken(token) {
  $("#new-token").textContent = token;
  $("#token-box").hidden = false;
  $("#token-box").scrollIntoView();
}

// A searchable, paged chat list with check boxes over `selected` (a Set of chat ids): the
// chats `opts.connection` may read, or those of account `opts.account`, or every chat. Its
// elements' ids start with `opts.prefix`, so one page can hold several.
function picker(root, opts) {
  const names = new Map((opts.names || []).map((c) => [c.id, c.name]));
  const selected = opts.selected;
  const p = opts.prefix || "";
  const el = (id) => $("#" + p + id, root);
  let offset = 0;
  const limit = 20;
  root.innerHTML =
    '<label for="' + p + 'chat-search">Search chats</label>' +
    '<input id="' + p + 'chat-search" type="search" autocomplete="off">' +
    '<ul class="chats" id="' + p + 'chat-list" aria-label="Chats"></ul>' +
    '<p class="pager"><button type="button" id="' + p + 'prev">Previous</button> ' +
    '<span id="' + p + 'page-info"></span> <button type="button" id="' + p + 'next">Next</button></p>';
  const list = el("chat-list");
  let total = 0;
  let timer = null;
  let asked = 0;
  async function load() {
    const q = new URLSearchParams({ q: el("chat-search").value, offset, limit });
    if (opts.connection) q.set("connection_id", opts.connection);
    if (opts.account) q.set("account_id", opts.account);
    // Only the latest answer is shown: an earlier search answered late must not replace it.
    const mine = ++asked;
    const res = await api("GET", "/api/chats?" + q);
    if (mine !== asked) return;
    if (!res.ok) { say(failure(res), "error"); return; }
    total = res.data.total;
    list.replaceChildren();
    for (const c of res.data.chats) {
      names.set(c.id, c.name);
      const li = document.createElement("li");
      const label = document.createElement("label");
      const box = document.createElement("input");
      box.type = "checkbox";
      box.value = c.id;
      box.checked = selected.has(c.id);
      box.addEventListener("change", () => {
        if (box.checked) selected.add(c.id); else selected.delete(c.id);
        opts.onChange();
      });
      label.append(box, " " + c.name + " ", Object.assign(document.createElement("small"), { textContent: c.kind }));
      li.append(label);
      list.append(li);
    }
    const last = Math.min(offset + limit, total);
    el("page-info").textContent = total ? (offset + 1) + "–" + last + " of " + total : "no chats match";
    el("prev").disabled = offset === 0;
    el("next").disabled = last >= total;
  }
  el("chat-search").addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => { offset = 0; load(); }, 150);
  });
  el("prev").addEventListener("click", () => { offset = Math.max(0, offset - limit); load(); });
  el("next").addEventListener("click", () => { offset += limit; load(); });
  load();
  return { name: (id) => names.get(id) || id, reload: load };
}

// Where a login goes: back to the consent page that sent the owner here, and nowhere else a
// `next` may name (no open redirect), else the connections page.
function afterLogin() {
  const next = new URLSearchParams(location.search).get("next");
  return next && /^\/oauth\/consent\?request=[A-Za-z0-9_-]{1,64}$/.test(next) ? next : "/connections";
}

function loginPage() {
  const form = $("#login-form");
  if (!form) return;
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const res = await api("POST", "/api/login", { password: $("#password").value });
    if (res.ok) { location.assign(afterLogin()); return; }
    $("#password").value = "";
    say(res.status === 429 ? "Too many failed attempts; wait a little and try again." :
        res.status === 401 ? "Wrong password." : failure(res), "error");
  });
}

function logoutButton() {
  const b = $("#logout");
  if (!b) return;
  b.addEventListener("click", async () => {
    await api("POST", "/api/logout", {});
    location.assign("/login");
  });
}

// The create form's scope: all chats, or the ids typed (a connection's page edits it by name).
function scopeBody(mode, text) {
  if (mode === "all") return { chats: { mode: "all" } };
  return { chats: { mode, chats: idLines(text) } };
}

function connectionsPage() {
  const form = $("#create-form");
  if (!form) return;
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const fd = new FormData(form);
    const days = Number(fd.get("days"));
    const body = {
      name: fd.get("name"),
      kind: fd.get("kind"),
      expires_at: new Date(Date.now() + days * 86400000).toISOString(),
      read_scope: scopeBody(fd.get("scope"), fd.get("chats")),
    };
    const res = await api("POST", "/api/connections", body);
    if (!res.ok) { say(failure(res), "error"); return; }
    say("Created “" + res.data.connection.name + "”. Copy its token below; reload the page to see it in the list.", "ok");
    showToken(res.data.token);
    form.reset();
  });
  for (const b of $$("button.rotate")) {
    b.addEventListener("click", async () => {
      if (!confirm("Rotate? The current token stops working at once and send permission goes back to none.")) return;
      const res = await api("POST", "/api/connections/rotate", { id: b.dataset.id, revision: Number(b.dataset.revision) });
      if (!res.ok) { say(failure(res), "error"); return; }
      say("Rotated. Copy the new token below.", "ok");
      b.dataset.revision = res.data.connection.revision;
      showToken(res.data.token);
    });
  }
  for (const b of $$("button.revoke")) {
    b.addEventListener("click", async () => {
      if (!confirm("Revoke “" + b.dataset.name + "”? Its token stops working at once.")) return;
      const res = await api("POST", "/api/connections/revoke", { id: b.dataset.id });
      if (!res.ok) { say(failure(res), "error"); return; }
      say("Revoked “" + b.dataset.name + "”.", "ok");
      const row = b.closest("tr");
      $$("button", row).forEach((x) => x.remove());
      const st = $(".state", row);
      st.textContent = "revoked";
      st.className = "state revoked";
    });
  }
}

function permissionsPage(data) {
  const selected = new Set(data.selected);
  let sendRevision = data.send_revision;
  let revision = data.revision;
  const modeBox = (m) => $('#mode input[value="' + m + '"]');
  modeBox(data.mode).checked = true;
  const countEl = $("#selected-count");
  let pick = null;
  function refresh() {
    countEl.textContent = String(selected.size);
    const names = Array.from(selected).map((id) => pick ? pick.name(id) : id);
    $("#selected-names").textContent = names.length ? "(" + names.join(", ") + ")" : "";
    $("#picker").hidden = !modeBox("selected").checked;
  }
  pick = picker($("#picker"), { connection: data.id, selected, names: data.names, onChange: refresh });
  $$('#mode input').forEach((r) => r.addEventListener("change", refresh));
  refresh();
  $("#save-permission").addEventListener("click", async () => {
    const mode = $('#mode input:checked').value;
    const body = {
      id: data.id, revision, mode,
      chats: mode === "selected" ? Array.from(selected) : [],
      expected_send_revision: sendRevision,
    };
    const res = await api("POST", "/api/connections/send-permission", body);
    if (res.status === 409) {
      say("Changed elsewhere — reopen this page to see the current permission, then edit again.", "error");
      return;
    }
    if (!res.ok) { say(failure(res), "error"); return; }
    sendRevision = res.data.revision;
    say("Saved: " + (res.data.mode === "selected" ? res.data.chats.length + " chats" : res.data.mode) + ".", "ok");
  });
  scopeEditor(data, (connection) => {
    revision = connection.revision;
    sendRevision = connection.send_permission.revision;
    $("#revision").textContent = String(revision);
    selected.clear();
    modeBox("none").checked = true;
    refresh();
    pick.reload();
  });
}

// A chat rule in a few words, as the page's summary says it.
function describe(rule) {
  const c = rule.chats;
  let text = c.mode === "all" ? "all chats" :
    c.mode === "selected" ? c.chats.length + " selected chats" : "all chats but " + c.chats.length;
  if (rule.since) text += ", from " + rule.since.slice(0, 10);
  if (rule.until) text += ", before " + rule.until.slice(0, 10);
  return text;
}

// One account's part of the read-scope editor: read it or not, and its rule — all chats, the
// chats picked (by name, with the same picker as the send permission) or all but those, and
// optional dates. A date left as loaded keeps its stored instant; a new one is midnight UTC.
function accountRule(account, opts) {
  const id = account.id;
  const rule = opts.rule;
  const picked = new Set(rule.chats.mode === "all" ? [] : rule.chats.chats);
  const root = document.createElement("fieldset");
  root.className = "account-rule";
  root.dataset.account = id;
  root.innerHTML =
    '<legend><label><input type="checkbox" class="read-account"> <span class="account-name"></span> ' +
    "<code>" + id + "</code>" + (account.removed ? " (removed)" : "") + "</label></legend>" +
    '<div class="rule">' +
    '<label><input type="radio" name="rule-' + id + '" value="all"> all chats</label> ' +
    '<label><input type="radio" name="rule-' + id + '" value="selected"> only the chats picked below</label> ' +
    '<label><input type="radio" name="rule-' + id + '" value="all_except"> all chats except those picked below</label>' +
    '<p class="picked"><strong class="picked-count">0</strong> chats picked. <span class="picked-names"></span></p>' +
    '<div class="picker" id="scope-picker-' + id + '"></div>' +
    '<p><label>From <input type="date" class="since"></label> ' +
    '<label>Before <input type="date" class="until"></label></p></div>';
  $(".account-name", root).textContent = account.name;
  const box = $(".read-account", root);
  box.checked = opts.read;
  $('input[value="' + rule.chats.mode + '"]', root).checked = true;
  const dates = {};
  for (const field of ["since", "until"]) {
    dates[field] = rule[field] || null;
    if (dates[field]) $("." + field, root).value = dates[field].slice(0, 10);
  }
  const pickerRoot = $(".picker", root);
  let pick = null;
  const mode = () => $('input[name="rule-' + id + '"]:checked', root).value;
  function refresh() {
    $(".rule", root).hidden = !box.checked;
    const listed = mode() !== "all";
    pickerRoot.hidden = !listed;
    $(".picked", root).hidden = !listed;
    if (listed && box.checked && !pick) {
      pick = picker(pickerRoot, { account: id, prefix: "scope-" + id + "-", selected: picked, names: opts.names, onChange: refresh });
    }
    $(".picked-count", root).textContent = String(picked.size);
    const names = Array.from(picked).map((c) => pick ? pick.name(c) : (opts.names.find((n) => n.id === c) || { name: c }).name);
    $(".picked-names", root).textContent = names.length ? "(" + names.join(", ") + ")" : "";
  }
  box.addEventListener("change", refresh);
  $$('input[type="radio"]', root).forEach((r) => r.addEventListener("change", refresh));
  refresh();
  return {
    id, root,
    reads: () => box.checked,
    setAll(all) {
      if (all) box.checked = true;
      box.disabled = all;
      refresh();
    },
    rule() {
      const m = mode();
      const out = { chats: m === "all" ? { mode: "all" } : { mode: m, chats: Array.from(picked) } };
      for (const field of ["since", "until"]) {
        const v = $("." + field, root).value;
        if (dates[field] && v === dates[field].slice(0, 10)) out[field] = dates[field];
        else if (v) out[field] = v + "T00:00:00Z";
      }
      return out;
    },
  };
}

// The read-scope editor: which accounts, and each one's rule ([`accountRule`]). One account
// alone is saved as the scope's own rule (a default-account scope looks as it always did);
// several get a rule each, and with "every account" the scope's own rule is what an account
// added later is read under: kept as it was when the scope already read every account, else
// all chats.
function scopeEditor(data, saved) {
  const form = $("#scope-form");
  let scope = data.scope;
  const allBox = $('#scope-accounts input[value="all"]');
  const everyAccount = (s) => !!(s.accounts && s.accounts.mode === "all");
  const only = everyAccount(scope) ? [] : (scope.accounts ? scope.accounts.accounts : ["default"]);
  const own = (s) => ({ chats: s.chats, since: s.since, until: s.until });
  const rules = data.accounts.map((a) => accountRule(a, {
    read: everyAccount(scope) || only.includes(a.id),
    rule: (scope.per_account || {})[a.id] || own(scope),
    names: data.names,
  }));
  rules.forEach((r) => $("#scope-rules").append(r.root));
  $('#scope-accounts input[value="' + (everyAccount(scope) ? "all" : "only") + '"]').checked = true;
  const later = () => {
    const r = everyAccount(scope) ? own(scope) : { chats: { mode: "all" } };
    if (!r.since) delete r.since;
    if (!r.until) delete r.until;
    return r;
  };
  function refresh() {
    for (const r of rules) r.setAll(allBox.checked);
    $("#later-rule").hidden = !allBox.checked;
    $("#later-rule").textContent = "An account added later is read under: " + describe(later()) + ".";
  }
  $$("#scope-accounts input").forEach((i) => i.addEventListener("change", refresh));
  refresh();
  form.addEventListener("submit", async (ev) => {
    ev.preventDefault();
    if (!confirm("Change what it may read? Its token stops working at once and send permission goes back to none.")) return;
    const all = allBox.checked;
    const read = rules.filter((r) => all || r.reads());
    let body;
    if (!all && read.length === 1) {
      body = read[0].rule();
      if (read[0].id !== "default") body.accounts = { mode: "only", accounts: [read[0].id] };
    } else {
      body = all ? later() : { chats: { mode: "all" } };
      body.accounts = all ? { mode: "all" } : { mode: "only", accounts: read.map((r) => r.id) };
      body.per_account = Object.fromEntries(read.map((r) => [r.id, r.rule()]));
    }
    const res = await api("POST", "/api/connections/read-scope", {
      id: data.id, revision: Number($("#revision").textContent), read_scope: body,
    });
    if (!res.ok) { say(failure(res), "error"); return; }
    scope = res.data.connection.read_scope;
    saved(res.data.connection);
    refresh();
    say("Read scope saved; send permission is back to none.", "ok");
    showToken(res.data.token);
  });
}

// The account a chat id names: `c_<hash>-<account>`, or the default account's `c_<hash>`
// (a hash is letters and digits, so the first "-" begins the account).
function accountOf(chatId) {
  const at = chatId.indexOf("-");
  return at < 0 ? "default" : chatId.slice(at + 1);
}

// The consent page's read scope: all chats (the default account's, as the create form's), or
// the chats picked; chats of several accounts get a rule per account, as the connection page
// saves them.
function consentScope(mode, picked) {
  if (mode === "all") return { chats: { mode: "all" } };
  const byAccount = new Map();
  for (const id of picked) {
    const a = accountOf(id);
    if (!byAccount.has(a)) byAccount.set(a, []);
    byAccount.get(a).push(id);
  }
  const accounts = Array.from(byAccount.keys());
  if (accounts.length === 1) {
    const body = { chats: { mode: "selected", chats: byAccount.get(accounts[0]) } };
    if (accounts[0] !== "default") body.accounts = { mode: "only", accounts };
    return body;
  }
  return {
    chats: { mode: "all" },
    accounts: { mode: "only", accounts },
    per_account: Object.fromEntries(accounts.map((a) => [a, { chats: { mode: "selected", chats: byAccount.get(a) } }])),
  };
}

// The consent page: approve (a new connection with the name, expiry, read scope and send
// permission chosen here) or deny; either way the worker answers where the browser goes next,
// the client's redirect URI with the code or access_denied.
function consentPage(data) {
  const form = $("#consent-form");
  const sets = { read: new Set(), send: new Set() };
  const picks = { read: null, send: null };
  const choice = (name) => $('input[name="' + name + '"]:checked', form).value;
  function refresh() {
    for (const part of ["read", "send"]) {
      const listed = choice(part) === "selected";
      $("#" + part + "-picker").hidden = !listed;
      $("#" + part + "-picked").hidden = !listed;
      if (listed && !picks[part]) {
        picks[part] = picker($("#" + part + "-picker"), { prefix: part + "-", selected: sets[part], onChange: refresh });
      }
      $("#" + part + "-count").textContent = String(sets[part].size);
      const names = Array.from(sets[part]).map((id) => picks[part] ? picks[part].name(id) : id);
      $("#" + part + "-names").textContent = names.length ? "(" + names.join(", ") + ")" : "";
    }
  }
  $$('input[type="radio"]', form).forEach((r) => r.addEventListener("change", refresh));
  refresh();
  const buttons = [$("#approve"), $("#deny")];
  async function decide(approve) {
    const body = { request: data.request, approve };
    if (approve) {
      const fd = new FormData(form);
      const readMode = choice("read");
      const sendMode = choice("send");
      if (readMode === "selected" && sets.read.size === 0) { say("Pick the chats it may read, or choose all chats.", "error"); return; }
      if (sendMode === "selected" && sets.send.size === 0) { say("Pick the chats it may send to, or choose nowhere.", "error"); return; }
      body.name = String(fd.get("name")).trim() || data.default_name;
      body.expires_at = new Date(Date.now() + Number(fd.get("days")) * 86400000).toISOString();
      body.read_scope = consentScope(readMode, sets.read);
      body.send_mode = sendMode;
      body.send_chats = sendMode === "selected" ? Array.from(sets.send) : [];
    }
    buttons.forEach((b) => { b.disabled = true; });
    const res = await api("POST", "/api/oauth/decide", body);
    // Only to a verified redirect URI (the worker's): https, loopback http or a native app's own
    // scheme (Cursor's cursor://…) — never one that would run something in this page.
    const to = (res.data && res.data.redirect) || "";
    const scheme = ((to.match(/^([a-z][a-z0-9+.-]*):/i) || [])[1] || "").toLowerCase();
    const unsafe = ["", "javascript", "data", "vbscript", "file", "about", "blob", "filesystem", "view-source"];
    if (!res.ok || unsafe.includes(scheme)) {
      buttons.forEach((b) => { b.disabled = false; });
      say(failure(res), "error");
      return;
    }
    say(approve ? "Approved; returning to the AI client…" : "Denied; returning to the AI client…", "ok");
    location.assign(res.data.redirect);
  }
  form.addEventListener("submit", (ev) => { ev.preventDefault(); decide(true); });
  $("#deny").addEventListener("click", () => decide(false));
}

function policyPage(data) {
  const selected = new Set(data.selected);
  let revision = data.revision;
  let pick = null;
  pick = picker($("#picker"), { selected, names: data.names, onChange: () => {} });
  $("#save-policy").addEventListener("click", async () => {
    const res = await api("POST", "/api/policy", { excluded_chats: Array.from(selected), revision });
    if (!res.ok) { say(failure(res), "error"); return; }
    revision = res.data.revision;
    say(res.data.excluded_chats.length + " chats excluded.", "ok");
  });
}

function accountPage() {
  // The account this page shows (its card names it).
  const card = $("#account-card");
  const account = card ? card.dataset.account : undefined;
  for (const b of $$("button.account-action")) {
    b.addEventListener("click", async () => {
      if (b.dataset.confirm && !confirm(b.dataset.confirm)) return;
      const res = await api("POST", "/api/account", { account_id: account, action: b.dataset.action });
      if (!res.ok) { say(failure(res), "error"); return; }
      location.reload();
    });
  }
  for (const b of $$("button.account-remove")) {
    b.addEventListener("click", async () => {
      const id = b.dataset.account;
      const body = { account_id: id };
      if (b.dataset.delete) {
        // First ask what would go; the answer names it.
        const ask = await api("POST", "/api/accounts/remove", { account_id: id, delete_archive: true });
        const typed = prompt(failure(ask) + "\n\nType the account's id to delete it for good:");
        if (typed === null) return;
        Object.assign(body, { delete_archive: true, confirm: typed });
      } else if (!confirm("Remove account " + id + "? Its archive stays readable; it is no longer connected.")) {
        return;
      }
      const res = await api("POST", "/api/accounts/remove", body);
      if (!res.ok) { say(failure(res), "error"); return; }
      location.reload();
    });
  }
  const add = $("#account-add-form");
  if (add) {
    add.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const fd = new FormData(add);
      const body = { account_id: fd.get("account_id") };
      if (fd.get("display_name")) body.display_name = fd.get("display_name");
      const res = await api("POST", "/api/accounts", body);
      if (!res.ok) { say(failure(res), "error"); return; }
      location.reload();
    });
  }
  const form = $("#pair-code-form");
  if (form) {
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const res = await api("POST", "/api/account", { account_id: account, action: "pair_with_code", phone: $("#phone").value });
      if (!res.ok) { say(failure(res), "error"); return; }
      location.reload();
    });
  }
}

// Times in the browser's own zone (the server writes UTC).
function localTimes() {
  for (const t of $$("time[datetime]")) {
    const d = new Date(t.getAttribute("datetime"));
    if (!isNaN(d)) { t.title = t.textContent; t.textContent = d.toLocaleString(); }
  }
}

// On every page of a session: a banner while an account is not live, since agents reading it
// may miss what arrives meanwhile. Read from the worker each time the page loads.
async function accountsBanner() {
  const banner = $("#accounts-banner");
  if (!banner) return;
  const res = await api("GET", "/api/accounts");
  if (!res.ok || !res.data) return;
  const down = res.data.accounts.filter((a) => !a.removed_at && a.state !== "live" && a.state !== "demo");
  if (down.length === 0) return;
  banner.textContent = "";
  const intro = document.createElement("strong");
  intro.textContent = down.length === 1 ? "An account is not live: " : down.length + " accounts are not live: ";
  banner.append(intro);
  down.forEach((a, i) => {
    const link = document.createElement("a");
    link.href = "/account?account_id=" + encodeURIComponent(a.account_id);
    const since = a.since ? " since " + new Date(a.since).toLocaleString() : "";
    link.textContent = a.display_name + " (" + a.account_id + ") is " + a.state.replace("_", " ") + since;
    if (i > 0) banner.append("; ");
    banner.append(link);
  });
  banner.append(". Agents may miss messages that arrive meanwhile.");
  banner.hidden = false;
}

document.addEventListener("DOMContentLoaded", () => {
  localTimes();
  accountsBanner();
  logoutButton();
  loginPage();
  connectionsPage();
  accountPage();
  const data = pageData();
  if (data && data.kind === "permissions") permissionsPage(data);
  if (data && data.kind === "policy") policyPage(data);
  if (data && data.kind === "consent") consentPage(data);
});
