"""A stdio MCP server that does nothing, at once: the floor of Claude Code's ``mcp_tool`` hook.

``bench/agent.py``'s ``floor`` set-up points the in-agent hook handlers at this server instead
of ``ctxmode serve``, so the time Claude Code's stream shows per hook call is Claude Code's own
dispatch (its MCP client, the substitution, the JSON-RPC round trip) with a server that answers
every call with an empty text immediately. Standard library only.
"""

from __future__ import annotations

import json
import sys


def main() -> int:
    out = sys.stdout.buffer
    for raw in sys.stdin.buffer:
        try:
            msg = json.loads(raw)
        except ValueError:
            continue
        if not isinstance(msg, dict) or "id" not in msg:
            continue
        method, params = msg.get("method"), msg.get("params") or {}
        result: dict[str, object]
        if method == "initialize":
            result = {
                "protocolVersion": params.get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "floor", "version": "0"},
            }
        elif method == "tools/list":
            schema = {"type": "object", "additionalProperties": True}
            result = {"tools": [{"name": "record_hook", "inputSchema": schema}]}
        elif method == "tools/call":
            result = {"content": [{"type": "text", "text": ""}]}
        elif method == "ping":
            result = {}
        else:
            reply = {"jsonrpc": "2.0", "id": msg["id"], "error": {"code": -32601, "message": "no"}}
            out.write(json.dumps(reply).encode() + b"\n")
            out.flush()
            continue
        out.write(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}).encode())
        out.write(b"\n")
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
