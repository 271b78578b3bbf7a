"""A remote MCP client that only speaks OAuth, built on the official MCP Python SDK's
`mcp.client.auth.OAuthClientProvider`, driven by the e2e test `compat::oauth` one step at a time
over stdin/stdout (one JSON object per line):

  -> {"authorize": URL, "client_id": ID}  the SDK found the authorization server from /mcp's
                                          401, registered (Dynamic Client Registration) and
                                          wants the owner;
  <- the callback URL                     what the owner's approval redirected to;
  -> {"tools": N, "read": "ok"}           after the code exchange: tools/list and list_chats;
  -> {"refreshed": true}                  an expired (and invalid) access token made the SDK
                                          refresh, and the call went through;
  <- "revoked"                            the owner revoked the connection on the dashboard;
  -> {"after_revoke": {...}}              the next call and the next refresh both fail.

The Python SDK refreshes before a request when its access token has expired by its own clock
(the token answer's `expires_in`); a 401 sends it straight to a new authorization, the owner
again (`OAuthClientProvider._auth_flow`). So the refresh step makes the access token both
invalid and expired: a refresh is the only way the call can succeed without the owner.

Environment: WAZAP_MCP_URL (the gateway's /mcp), OAUTH_REDIRECT (a loopback callback URL).
Tokens and codes are kept in memory only and never printed.
"""

import asyncio
import json
import os
import sys
import time
import traceback
from urllib.parse import parse_qs, urlparse

try:
    import anyio
    import httpx2
    from mcp import Client
    from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
except ImportError as e:  # the Rust test turns this exit code into a clear failure
    print(f"the MCP Python SDK is missing ({e}): pip install -r tests/compat/requirements.txt", file=sys.stderr)
    sys.exit(3)

CLIENT_NAME = "wazap SDK check (Python)"


def say(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


async def next_line():
    line = await anyio.to_thread.run_sync(sys.stdin.readline)
    if not line:
        raise EOFError("stdin closed")
    return line.strip()


class MemoryStorage:
    """The SDK's `TokenStorage`, in memory only."""

    def __init__(self):
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info


class OwnerAskedAgain(Exception):
    """The SDK wanted the owner's approval again: it could not go on with what it held."""


def tool_outcome(result):
    """"ok", or the error code of a tool error."""
    if not result.is_error:
        return "ok"
    text = " ".join(getattr(b, "text", "") for b in result.content)
    try:
        return json.loads(text)["error"]["code"]
    except (ValueError, KeyError, TypeError):
        return "tool error"


def describe(e: BaseException) -> str:
    """What went wrong, by type (an exception's text may quote an HTTP body)."""
    if isinstance(e, BaseExceptionGroup):
        return describe(e.exceptions[0])
    if isinstance(e, OwnerAskedAgain) or isinstance(e.__cause__, OwnerAskedAgain):
        return "owner asked again"
    return type(e).__name__


class OAuthCheck:
    """The SDK's OAuth client with the owner's side of its redirect and callback handlers (the
    driving test approves once), and what the token endpoint answered (grant and status only)."""

    def __init__(self, url: str, redirect: str):
        self.url = url
        self.storage = MemoryStorage()
        self.owner_available = True
        self.asked = 0
        self.token_answers: list[tuple[str, int]] = []
        self.provider = OAuthClientProvider(
            server_url=url,
            client_metadata=OAuthClientMetadata(
                client_name=CLIENT_NAME,
                redirect_uris=[redirect],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                token_endpoint_auth_method="none",
            ),
            storage=self.storage,
            redirect_handler=self.redirect_handler,
            callback_handler=self.callback_handler,
        )

    async def redirect_handler(self, authorization_url: str) -> None:
        self.asked += 1
        if self.owner_available:
            client = self.storage.client
            say({"authorize": authorization_url, "client_id": client.client_id if client else None})

    async def callback_handler(self) -> AuthorizationCodeResult:
        if not self.owner_available:
            raise OwnerAskedAgain()
        self.owner_available = False
        query = parse_qs(urlparse(await next_line()).query)
        one = lambda k: query.get(k, [None])[0]  # noqa: E731
        if one("code") is None:
            raise RuntimeError(f"no code in the callback (error={one('error')})")
        return AuthorizationCodeResult(code=one("code"), state=one("state"), iss=one("iss"))

    async def on_response(self, response: httpx2.Response) -> None:
        request = response.request
        form = request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded")
        if request.method == "POST" and form:
            grant = parse_qs(request.content.decode()).get("grant_type", [None])[0]
            if grant:
                self.token_answers.append((grant, response.status_code))

    def expire(self, access_token: str | None = None) -> None:
        """Make the held access token expired by the SDK's clock (and, when given, replace it)."""
        tokens = self.storage.tokens
        if access_token is not None:
            tokens = tokens.model_copy(update={"access_token": access_token})
        self.storage.tokens = tokens
        self.provider.context.current_tokens = tokens
        self.provider.context.token_expiry_time = time.time() - 1

    async def run(self) -> int:
        async with httpx2.AsyncClient(
            auth=self.provider,
            timeout=httpx2.Timeout(30.0, read=120.0),
            event_hooks={"response": [self.on_response]},
        ) as http:

            def session():
                return Client(streamable_http_client(self.url, http_client=http), mode="auto", cache=None)

            async with session() as client:
                # 1–2. The first request met the 401: discovery, registration, the owner's
                # approval (the handlers above) and the code exchange happened inside it.
                if self.asked != 1 or self.storage.tokens is None:
                    say({"error": f"expected one authorization, got {self.asked}"})
                    return 1
                tools = (await client.list_tools()).tools
                read = tool_outcome(await client.call_tool("list_chats", {}))
                say({"tools": len(tools), "read": read})

                # 3. The access token expired and is no longer valid: the SDK refreshes (the
                # refresh token rotates) and the call goes through, without the owner.
                old_refresh = self.storage.tokens.refresh_token
                answers = len(self.token_answers)
                self.expire(access_token="not-a-token")
                again = tool_outcome(await client.call_tool("list_chats", {}))
                tokens = self.storage.tokens
                rotated = tokens is not None and tokens.refresh_token not in (None, old_refresh)
                grants = self.token_answers[answers:]
                refreshed = again == "ok" and rotated and self.asked == 1 and grants == [("refresh_token", 200)]
                if not refreshed:
                    why = f"call {again}, rotated {rotated}, asked {self.asked}, token answers {grants}"
                    print(f"no refresh: {why}", file=sys.stderr)
                say({"refreshed": refreshed})

                # 4. The owner revokes the connection: the next call fails.
                say({"ready_for_revoke": True})
                await next_line()
                try:
                    call = tool_outcome(await client.call_tool("list_chats", {}))
                except Exception as e:  # noqa: BLE001 - any failure is the answer
                    call = describe(e)

            # Once its access token expires the SDK refreshes; refused, it can only ask the
            # owner again, which ends the session (its transport fails: hence one of its own).
            answers = len(self.token_answers)
            self.expire()
            try:
                async with session() as client:
                    then = tool_outcome(await client.call_tool("list_chats", {}))
            except Exception as e:  # noqa: BLE001
                then = describe(e)
            refresh = [status for grant, status in self.token_answers[answers:] if grant == "refresh_token"]
            say(
                {
                    "after_revoke": {
                        "call": call,
                        "refresh": f"http {refresh[0]}" if refresh else "not tried",
                        "then": then,
                        "asked_owner_again": self.asked > 1,
                    }
                }
            )
        return 0


def main():
    url = os.environ.get("WAZAP_MCP_URL")
    redirect = os.environ.get("OAUTH_REDIRECT")
    if not url or not redirect:
        print("WAZAP_MCP_URL and OAUTH_REDIRECT must be set", file=sys.stderr)
        return 2
    try:
        return asyncio.run(OAuthCheck(url, redirect).run())
    except Exception as e:  # noqa: BLE001 - reported to the driving test
        traceback.print_exc()
        say({"error": describe(e)})
        return 1


if __name__ == "__main__":
    sys.exit(main())
