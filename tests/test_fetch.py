"""fetch_and_index against a local HTTP server started by the test (no outside network)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from ctxmode import InvalidInput, Store
from ctxmode.search.fetch import blocked_address, check_url, fetch_and_index
from ctxmode.search.sources import source_chunks
from ctxmode.stats import sandbox_stats

PAGE = """<!doctype html><html><head><title>Widget guide</title>
<script>var tracking = "should not be indexed";</script></head>
<body><h1>Widget guide</h1><p>Widgets are configured with <b>frobnicate</b>.</p>
<h2>Installation</h2><p>Run the installer. api_key = "sk-live-secretvalue1234567890abcd"</p>
<pre><code>pip install widget</code></pre>
<h2>Troubleshooting</h2><p>Restart the gizmo daemon.</p></body></html>"""


class Handler(BaseHTTPRequestHandler):
    hits: dict[str, int] = {}

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        Handler.hits[self.path] = Handler.hits.get(self.path, 0) + 1
        if self.path == "/page":
            self._send(200, "text/html; charset=utf-8", PAGE.encode())
        elif self.path == "/data.json":
            body = json.dumps({"service": {"name": "billing", "port": 8443}, "owners": ["ana"]})
            self._send(200, "application/json", body.encode())
        elif self.path == "/notes.txt":
            self._send(200, "text/plain", b"plain notes\n\nsecond paragraph about queues\n")
        elif self.path == "/big":
            self._send(200, "text/plain", b"x" * 300_000)
        elif self.path == "/redirect-metadata":
            self.send_response(302)
            self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
            self.end_headers()
        elif self.path == "/image":
            self._send(200, "image/png", b"\x89PNG\r\n\x1a\n\0\0\0")
        else:
            self._send(404, "text/plain", b"missing")

    def _send(self, code: int, ctype: str, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    Handler.hits = {}
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)


def test_html_becomes_markdown_chunks_by_heading(store: Store, server: str) -> None:
    report = fetch_and_index(store, f"{server}/page", source="widgets")
    assert report.source == "widgets" and not report.from_cache
    assert report.status_code == 200 and report.bytes_fetched == len(PAGE.encode())
    chunks = dict(source_chunks(store, "widgets"))
    assert "Widget guide > Installation" in chunks
    assert "Widget guide > Troubleshooting" in chunks
    install = chunks["Widget guide > Installation"]
    assert "```" in install and "pip install widget" in install
    everything = "\n".join(chunks.values())
    assert "tracking" not in everything  # scripts are dropped
    assert "sk-live-secretvalue" not in everything  # redacted before storage
    assert "**frobnicate**" in everything
    assert "widgets" in report.summary and report.bytes_returned < report.bytes_fetched


def test_json_kept_as_json_and_text_as_text(store: Store, server: str) -> None:
    fetch_and_index(store, f"{server}/data.json")
    chunks = source_chunks(store, f"{server}/data.json")
    assert any('"billing"' in c for _, c in chunks)
    assert any("service" in t for t, _ in chunks)
    fetch_and_index(store, f"{server}/notes.txt", source="notes")
    assert "queues" in "\n".join(c for _, c in source_chunks(store, "notes"))


def test_ttl_cache_avoids_a_second_request(store: Store, server: str) -> None:
    first = fetch_and_index(store, f"{server}/page", source="w", ttl_s=3600, now=1_000_000)
    again = fetch_and_index(store, f"{server}/page", source="w", ttl_s=3600, now=1_000_100)
    assert Handler.hits["/page"] == 1
    assert again.from_cache and again.chunks == first.chunks and again.bytes_fetched == 0
    expired = fetch_and_index(store, f"{server}/page", source="w", ttl_s=3600, now=1_010_000)
    assert not expired.from_cache and Handler.hits["/page"] == 2
    forced = fetch_and_index(store, f"{server}/page", source="w", force=True, now=1_010_001)
    assert not forced.from_cache and Handler.hits["/page"] == 3


def test_fetches_are_counted_in_sandbox_runs(store: Store, server: str) -> None:
    report = fetch_and_index(store, f"{server}/big", source="big")
    totals = sandbox_stats(store)
    assert totals.by_kind["fetch"] == {
        "runs": 1,
        "bytes_produced": 300_000,
        "bytes_returned": report.bytes_returned,
    }
    assert totals.bytes_fetched == 300_000 and totals.bytes_produced == 0
    assert totals.bytes_kept_out == 300_000 - report.bytes_returned


@pytest.mark.parametrize(
    "url",
    [
        "file:///etc/passwd",
        "ftp://example.com/file.txt",
        "gopher://example.com/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[fd00:ec2::254]/latest/meta-data/",
        "http://[::ffff:169.254.169.254]/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://0.0.0.0:8080/",
        "not a url",
        "",
    ],
)
def test_refuses_dangerous_urls(store: Store, url: str) -> None:
    with pytest.raises(InvalidInput):
        fetch_and_index(store, url)
    assert store.query("SELECT count(*) FROM sources")[0][0] == 0


def test_refuses_a_redirect_to_metadata(store: Store, server: str) -> None:
    with pytest.raises(InvalidInput, match="169.254.169.254"):
        fetch_and_index(store, f"{server}/redirect-metadata")


def test_http_errors_and_binary_content_are_clear(store: Store, server: str) -> None:
    with pytest.raises(InvalidInput, match="HTTP 404"):
        fetch_and_index(store, f"{server}/nope")
    with pytest.raises(InvalidInput, match="image/png"):
        fetch_and_index(store, f"{server}/image")


def test_address_rules() -> None:
    assert blocked_address("169.254.169.254")
    assert blocked_address("fe80::1")
    assert blocked_address("100.100.100.200")
    assert not blocked_address("127.0.0.1")
    assert not blocked_address("10.1.2.3")
    assert check_url("http://127.0.0.1:9/x")[0] == "http://127.0.0.1:9/x"
