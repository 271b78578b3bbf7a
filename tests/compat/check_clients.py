"""Drive a wazap server with the official MCP Python SDK, as an agent's client would.

Either through `wazap-stdio` (stdio client; the adapter reads WAZAP_URL and WAZAP_TOKEN from
this process's environment) or straight at the gateway's /mcp (Streamable HTTP client with an
Authorization header). Initializes, lists the tools (count, annotations, output schemas),
calls read tools and a send tool, and prints one JSON summary line. Any mismatch exits 1 with
the reason on stderr. The token is read from WAZAP_TOKEN, never from arguments.

Run by the Rust e2e test `compat` (tests/tests/e2e/compat.rs) against a sim stack.
"""

import argparse
import asyncio
import json
import os
import sys

try:
    import httpx2
    from mcp import Client, StdioServerParameters
    from mcp.client.streamable_http import streamable_http_client
except ImportError as e:  # the Rust test turns this exit code into a clear failure
    print(f"the MCP Python SDK is missing ({e}): pip install -r tests/compat/requirements.txt", file=sys.stderr)
    sys.exit(3)

# readOnlyHint of every wazap tool (DESIGN §5).
READ_ONLY = {
    "list_chats": True,
    "search_contacts": True,
    "search_groups": True,
    "read_messages": True,
    "wait_for_messages": True,
    "search_messages": True,
    "search_attachments": True,
    "get_attachment": True,
    "send_message": False,
    "send_media": False,
    "send_voice_note": False,
    "get_send_status": True,
}
SEND_TOOLS = {"send_message", "send_media", "send_voice_note", "get_send_status"}


class Mismatch(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Mismatch(what)


def client_for(args, token):
    if args.target == "stdio":
        env = {"WAZAP_URL": args.url, "WAZAP_TOKEN": token}
        if "RUST_LOG" in os.environ:
            env["RUST_LOG"] = os.environ["RUST_LOG"]
        server = StdioServerParameters(command=args.stdio_bin, args=[], env=env)
        return Client(server, mode=args.mode, cache=None)
    http = httpx2.AsyncClient(
        headers={"Authorization": f"Bearer {token}"},
        timeout=httpx2.Timeout(30.0, read=120.0),
    )
    return Client(streamable_http_client(args.url, http_client=http), mode=args.mode, cache=None)


def structured(result, tool):
    if result.is_error:
        text = " ".join(getattr(b, "text", "") for b in result.content)
        raise Mismatch(f"{tool} failed: {text}")
    expect(isinstance(result.structured_content, dict), f"{tool}: no structuredContent")
    texts = [b.text for b in result.content if getattr(b, "type", "") == "text"]
    expect(
        any(json.loads(t) == result.structured_content for t in texts),
        f"{tool}: the text content is not the structured content as JSON",
    )
    return result.structured_content


async def run(args, token):
    summary = {"target": args.target, "mode": args.mode}
    async with client_for(args, token) as client:
        summary["protocol"] = client.protocol_version
        summary["server"] = client.server_info.name if client.server_info else None
        expect(client.instructions and "untrusted" in client.instructions, "instructions missing")

        tools = (await client.list_tools()).tools
        names = sorted(t.name for t in tools)
        summary["tools"] = names
        expect(len(tools) == args.expect_tools, f"expected {args.expect_tools} tools, got {len(tools)}: {names}")
        for t in tools:
            a = t.annotations
            expect(a is not None, f"{t.name}: no annotations")
            expect(a.read_only_hint == READ_ONLY[t.name], f"{t.name}: readOnlyHint {a.read_only_hint}")
            expect(a.destructive_hint is False, f"{t.name}: destructiveHint {a.destructive_hint}")
            expect(a.idempotent_hint is True, f"{t.name}: idempotentHint {a.idempotent_hint}")
            expect(a.open_world_hint == (t.name in SEND_TOOLS), f"{t.name}: openWorldHint {a.open_world_hint}")
            expect(t.output_schema and t.output_schema.get("type") == "object", f"{t.name}: no outputSchema")
            expect(t.input_schema.get("type") == "object", f"{t.name}: no inputSchema")

        chats = structured(await client.call_tool("list_chats", {}), "list_chats")["chats"]
        expect(any(c["chat_id"] == args.chat for c in chats), "list_chats does not show the chat")
        page = structured(await client.call_tool("read_messages", {"chat_id": args.chat}), "read_messages")
        texts = [m["text"] for m in page["messages"]]
        expect(args.expect_text in texts, f"read_messages does not show the injected message: {texts}")
        summary["read"] = len(page["messages"])
        # A tool-level failure reaches the client as the gateway shaped it.
        missing = await client.call_tool("read_messages", {"chat_id": "c_doesnotexist"})
        expect(missing.is_error, "read_messages of an unknown chat did not fail")
        body = json.loads(" ".join(b.text for b in missing.content if getattr(b, "type", "") == "text"))
        expect(body["error"]["code"] == "chat_not_found", f"unknown chat: {body}")

        if args.request_id:
            sent = structured(
                await client.call_tool(
                    "send_message",
                    {"chat_id": args.chat, "request_id": args.request_id, "text": args.send_text},
                ),
                "send_message",
            )
            expect(sent["state"] == "accepted", f"send_message state {sent['state']}")
            status = structured(
                await client.call_tool("get_send_status", {"request_id": args.request_id}),
                "get_send_status",
            )
            expect(status["state"] == "accepted" and status["duplicate"], f"get_send_status {status}")
            summary["sent"] = sent["message_id"]
    return summary


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--target", choices=["stdio", "http"], required=True)
    p.add_argument("--mode", default="auto", help="auto (2026-07-28, falls back) or legacy (initialize)")
    p.add_argument("--url", required=True, help="the gateway's /mcp URL")
    p.add_argument("--stdio-bin", help="the wazap-stdio executable (target stdio)")
    p.add_argument("--expect-tools", type=int, default=12)
    p.add_argument("--chat", required=True, help="a chat_id that holds --expect-text")
    p.add_argument("--expect-text", required=True)
    p.add_argument("--request-id", help="send --send-text to --chat with this request_id")
    p.add_argument("--send-text", default="compat check")
    args = p.parse_args()
    token = os.environ.get("WAZAP_TOKEN")
    if not token:
        print("WAZAP_TOKEN is not set", file=sys.stderr)
        return 2
    try:
        summary = asyncio.run(run(args, token))
    except Mismatch as e:
        print(f"{args.target}/{args.mode}: {e}", file=sys.stderr)
        return 1
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
