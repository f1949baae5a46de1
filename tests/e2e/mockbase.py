"""The common part of the scripted model servers: a stdlib HTTP server on 127.0.0.1 that logs
every request (kind, path, JSON body) and lets a subclass answer it.

Each wire protocol (``mock_anthropic``, ``mock_responses``, ``mock_gemini``) subclasses
``ScriptedServer`` and implements ``answer``; tests read ``requests`` (or the JSONL log).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


class Reply:
    """What ``answer`` returns: a status, a content type and the body bytes."""

    def __init__(self, body: bytes, content_type: str = "application/json", status: int = 200):
        self.body, self.content_type, self.status = body, content_type, status

    @classmethod
    def json(cls, obj: Any, status: int = 200) -> Reply:
        return cls(json.dumps(obj).encode(), "application/json", status)

    @classmethod
    def sse(cls, events: list[tuple[str | None, Any]], sep: str = "\n\n") -> Reply:
        """Server-sent events; ``None`` as the name writes a ``data:`` line only."""
        out = []
        for name, data in events:
            head = f"event: {name}\n" if name else ""
            out.append(f"{head}data: {json.dumps(data)}{sep}")
        return cls("".join(out).encode(), "text/event-stream")


class ScriptedServer:
    """Serve ``answer(method, path, body)`` on an ephemeral 127.0.0.1 port; log every request."""

    def __init__(self, log_path: Path | None = None) -> None:
        self.log_path = log_path
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.RLock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _serve(self, method: str) -> None:
                size = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(size) if size else b""
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_raw": raw.decode("utf-8", "replace")}
                try:
                    reply = owner.answer(method, self.path, body)
                except Exception as exc:  # noqa: BLE001 - a script error must reach the test
                    owner.log("error", self.path, body, error=repr(exc))
                    reply = Reply.json({"error": {"message": repr(exc)}}, 500)
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(reply.body)))
                self.send_header("Connection", "close")
                self.end_headers()
                self.wfile.write(reply.body)
                self.close_connection = True

            def do_GET(self) -> None:  # noqa: N802
                self._serve("GET")

            def do_POST(self) -> None:  # noqa: N802
                self._serve("POST")

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = int(self.httpd.server_address[1])
        self.url = f"http://127.0.0.1:{self.port}"

    def answer(self, method: str, path: str, body: Any) -> Reply:
        raise NotImplementedError

    def log(self, kind: str, path: str, body: Any, **extra: Any) -> dict[str, Any]:
        with self.lock:
            rec = {"n": len(self.requests) + 1, "t": time.time(), "kind": kind, "path": path}
            rec.update(extra)
            rec["body"] = body
            self.requests.append(rec)
            if self.log_path is not None:
                with self.log_path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
            return rec

    def of_kind(self, *kinds: str) -> list[dict[str, Any]]:
        with self.lock:
            return [r for r in self.requests if r["kind"] in kinds]

    def start(self) -> ScriptedServer:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
