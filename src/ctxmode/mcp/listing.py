"""What ``ctxmode serve`` answers before any tool runs, recorded from the SDK server itself.

``listing.json`` holds the SDK server's own replies to ``initialize`` (one per handshake
protocol version), ``ping`` and the list requests (tools, resources, resource templates,
prompts). The stdio front (``mcp.front``) answers those from this file, so an agent's handshake
needs neither the SDK nor pydantic; ``tests/test_mcp_front.py`` fails when the file no longer
matches what ``build_server`` answers. After changing a tool, resource, prompt or the version:

    .venv/bin/python -m ctxmode.mcp.listing --write

``load()`` is standard library only (the front imports this module); ``record()`` imports the
SDK.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

TYPE_CHECKING = False  # mypy reads it as true; ``typing`` is not imported at run time
if TYPE_CHECKING:
    from typing import Any

PATH = Path(__file__).with_name("listing.json")

#: Requests answered from the file: no parameters beyond ``_meta``, a reply that depends on
#: nothing but the code.
STATIC_METHODS = (
    "ping",
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
)


def load() -> dict[str, Any]:
    """The recorded listing (``handshake_versions``, ``initialize`` by version, ``results``)."""
    data: dict[str, Any] = json.loads(PATH.read_text(encoding="utf-8"))
    return data


def _session(lines: list[dict[str, Any]] | list[dict[str, Any] | str]) -> dict[Any, dict[str, Any]]:
    """Replies by request id of one SDK session fed ``lines`` (messages or raw lines)."""
    import queue
    import tempfile

    import anyio

    from ctxmode.mcp.sdk.bridge import serve_lines
    from ctxmode.mcp.sdk.server import build_server

    feed: queue.Queue[str | None] = queue.Queue()
    for line in lines:
        feed.put(line if isinstance(line, str) else json.dumps(line))
    # The session ends once every request has its reply (an early end cancels calls).
    waiting = {m["id"] for m in lines if isinstance(m, dict) and "id" in m and "method" in m}
    out: list[str] = []

    def write(line: str) -> None:
        out.append(line)
        waiting.discard(json.loads(line).get("id"))
        if not waiting:
            feed.put(None)

    if not waiting:
        feed.put(None)
    with tempfile.TemporaryDirectory() as tmp:
        anyio.run(serve_lines, build_server(Path(tmp) / "listing.db", Path(tmp)), feed, write)
    replies = [json.loads(line) for line in out]
    return {r["id"]: r for r in replies if "id" in r}


def _initialize(rid: Any, version: str) -> dict[str, Any]:
    params = {
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "ctxmode-listing", "version": "0"},
    }
    return {"jsonrpc": "2.0", "id": rid, "method": "initialize", "params": params}


def record() -> dict[str, Any]:
    """Ask the SDK server for everything the front answers on its own."""
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, LATEST_HANDSHAKE_VERSION

    initialize: dict[str, Any] = {}
    for version in HANDSHAKE_PROTOCOL_VERSIONS:
        initialize[version] = _session([_initialize(0, version)])[0]["result"]
    opening = [_initialize(0, LATEST_HANDSHAKE_VERSION)]
    opening.append({"jsonrpc": "2.0", "method": "notifications/initialized"})
    asks = [{"jsonrpc": "2.0", "id": i + 1, "method": m} for i, m in enumerate(STATIC_METHODS)]
    replies = _session(opening + asks)
    results = {}
    for ask in asks:
        reply = replies[ask["id"]]
        if "result" not in reply:
            raise RuntimeError(f"{ask['method']}: the SDK server answered {reply}")
        results[ask["method"]] = reply["result"]
    return {
        "handshake_versions": list(HANDSHAKE_PROTOCOL_VERSIONS),
        "latest_handshake": LATEST_HANDSHAKE_VERSION,
        "initialize": initialize,
        "results": results,
    }


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    if argv != ["--write"]:
        print("usage: python -m ctxmode.mcp.listing --write", file=sys.stderr)
        return 2
    PATH.write_text(render(record()), encoding="utf-8")
    print(f"wrote {PATH}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
