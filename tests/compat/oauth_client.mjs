// A remote MCP client that only speaks OAuth, built on the official TypeScript MCP SDK's client
// (@modelcontextprotocol/client) and its `OAuthClientProvider`, driven by the e2e test
// `compat::oauth` one step at a time over stdin/stdout (one JSON object per line):
//
//   → {"authorize": URL}           the SDK found the authorization server from /mcp's 401,
//                                  registered (Dynamic Client Registration, or with
//                                  OAUTH_CLIENT_METADATA_URL set its metadata document's URL as
//                                  its client id) and wants the owner;
//   ← the callback URL             what the owner's approval redirected to;
//   → {"tools": N, "read": "ok"}   after the code exchange: tools/list and list_chats;
//   → {"refreshed": true}          an invalid access token made the SDK refresh and retry;
//   ← "revoked"                    the owner revoked the connection on the dashboard;
//   → {"after_revoke": …}          the next call fails (its tool error's code), and so does the
//                                  next refresh (the token endpoint's status); the SDK can only
//                                  ask the owner again.
//
// Environment: WAZAP_MCP_URL (the gateway's /mcp), OAUTH_REDIRECT (a loopback callback URL).
// Tokens are kept in memory only and never printed.
import { createInterface } from "node:readline";
import { randomBytes } from "node:crypto";
import {
  Client,
  StreamableHTTPClientTransport,
  UnauthorizedError,
  auth,
} from "@modelcontextprotocol/client";

const serverUrl = new URL(process.env.WAZAP_MCP_URL);
const redirectUrl = process.env.OAUTH_REDIRECT;
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const say = (obj) => process.stdout.write(JSON.stringify(obj) + "\n");
const next = async () => (await lines.next()).value;

// What the token endpoint answered, by grant type (status only; the bodies hold tokens).
const tokenAnswers = [];
async function recordingFetch(url, init) {
  const response = await fetch(url, init);
  const body = init && init.body;
  const grant = body instanceof URLSearchParams ? body.get("grant_type")
    : typeof body === "string" ? new URLSearchParams(body).get("grant_type") : null;
  if (grant) tokenAnswers.push([grant, response.status]);
  return response;
}

const store = { client: undefined, tokens: undefined, verifier: undefined, state: undefined };
let authorizeAsked = null;
const provider = {
  get redirectUrl() { return redirectUrl; },
  // A Client ID Metadata Document (served by the test), used when the server supports them.
  clientMetadataUrl: process.env.OAUTH_CLIENT_METADATA_URL || undefined,
  get clientMetadata() {
    return {
      client_name: "wazap SDK check (TypeScript)",
      redirect_uris: [redirectUrl],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  },
  state() { store.state = randomBytes(16).toString("hex"); return store.state; },
  clientInformation() { return store.client; },
  saveClientInformation(info) { store.client = info; },
  tokens() { return store.tokens; },
  saveTokens(tokens) { store.tokens = tokens; },
  redirectToAuthorization(url) { authorizeAsked = url; },
  saveCodeVerifier(v) { store.verifier = v; },
  codeVerifier() { return store.verifier; },
  invalidateCredentials(scope) {
    if (scope === "all" || scope === "tokens") store.tokens = undefined;
    if (scope === "all" || scope === "client") store.client = undefined;
    if (scope === "all" || scope === "verifier") store.verifier = undefined;
  },
};

async function connect() {
  const transport = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider, fetch: recordingFetch });
  const client = new Client({ name: "wazap-oauth-check", version: "1.0.0" });
  await client.connect(transport);
  return { client, transport };
}

// "ok", or the code of a tool error.
function outcome(result) {
  if (!result.isError) return "ok";
  try { return JSON.parse(result.content[0].text).error.code; } catch (_) { return "tool error"; }
}

function describe(e) {
  return e instanceof UnauthorizedError ? "unauthorized" : String(e && e.message ? e.message : e);
}

// 1. Unauthorized: the SDK discovers, registers and asks for the owner's approval.
const first = new StreamableHTTPClientTransport(serverUrl, { authProvider: provider, fetch: recordingFetch });
try {
  await new Client({ name: "wazap-oauth-check", version: "1.0.0" }).connect(first);
  say({ error: "connected without authorization" });
  process.exit(1);
} catch (e) {
  if (!(e instanceof UnauthorizedError) || !authorizeAsked) {
    say({ error: "expected the SDK to ask for authorization: " + describe(e) });
    process.exit(1);
  }
}
say({ authorize: authorizeAsked.toString(), client_id: store.client && store.client.client_id });

// 2. The owner approved: exchange the code, then list tools and read.
const callback = new URL(await next());
if (callback.searchParams.get("state") !== store.state) {
  say({ error: "the state did not come back" });
  process.exit(1);
}
await first.finishAuth(callback.searchParams);
let { client } = await connect();
const tools = await client.listTools();
const read = await client.callTool({ name: "list_chats", arguments: {} });
say({ tools: tools.tools.length, read: read.isError ? "error" : "ok" });

// 3. A rejected access token: the SDK refreshes with its refresh token and retries.
const oldRefresh = store.tokens.refresh_token;
let answers = tokenAnswers.length;
store.tokens = { ...store.tokens, access_token: "not-a-token" };
await client.close();
({ client } = await connect());
const again = outcome(await client.callTool({ name: "list_chats", arguments: {} }));
const grants = tokenAnswers.slice(answers);
const refreshed = store.tokens.refresh_token !== oldRefresh && again === "ok" &&
  JSON.stringify(grants) === JSON.stringify([["refresh_token", 200]]);
if (!refreshed) console.error("refresh: call " + again + ", token answers " + JSON.stringify(grants));
say({ refreshed });

// 4. The owner revokes the connection: calls and refreshes fail.
say({ ready_for_revoke: true });
await next();
let call;
try {
  call = outcome(await client.callTool({ name: "list_chats", arguments: {} }));
} catch (e) {
  call = describe(e);
}
let then;
answers = tokenAnswers.length;
try {
  authorizeAsked = null;
  then = await auth(provider, { serverUrl, fetchFn: recordingFetch });
} catch (e) {
  then = "failed: " + describe(e);
}
const refreshes = tokenAnswers.slice(answers).filter(([grant]) => grant === "refresh_token");
say({
  after_revoke: {
    call,
    refresh: refreshes.length ? "http " + refreshes[0][1] : "not tried",
    then,
    asked_owner_again: authorizeAsked !== null,
  },
});
await client.close().catch(() => {});
process.exit(0);
