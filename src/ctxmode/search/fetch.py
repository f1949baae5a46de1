"""Fetch a web page or document over HTTP(S) and index it as a ``url`` source.

Invariants:
- only ``http`` and ``https`` URLs are fetched; the host is resolved and every address checked,
  and so is the address actually connected to (defeats DNS rebinding) and every redirect hop.
  Refused: link-local addresses (169.254.0.0/16, fe80::/10, which hold the cloud metadata
  services), the AWS IPv6 metadata address fd00:ec2::254, Alibaba's 100.100.100.200, the
  unspecified and multicast addresses, and metadata host names (metadata.google.internal ...).
  Loopback and private networks are allowed on purpose: local documentation servers are a
  real use, and the tests serve pages from 127.0.0.1;
- environment proxies are ignored (a proxy would resolve the host itself, out of our check);
- a response body is read up to ``MAX_FETCH_BYTES`` and the request is bounded by a timeout;
- HTML becomes markdown (markdownify), JSON and text are kept as they are; everything is
  redacted before it is stored;
- a fetched URL is cached for ``ttl_s`` seconds (``sources.fetched_at``/``expires_at``): within
  that time the stored copy is reused without any network access;
- every call is recorded in ``sandbox_runs`` (kind ``fetch``): bytes fetched vs bytes of the
  summary returned.

httpx is imported inside ``fetch_and_index`` so that importing this module stays cheap.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin, urlsplit, urlunsplit

from ctxmode.core import config
from ctxmode.core.errors import InvalidInput
from ctxmode.core.redact import drop_cut_tail, redact
from ctxmode.search.indexing import index_content
from ctxmode.search.sources import get_source, source_chunks

if TYPE_CHECKING:
    from ctxmode.core.db import Database

DEFAULT_TTL_S = config.FETCH_TTL_S
DEFAULT_TIMEOUT_S = 15.0
#: Largest response body read (bytes); the rest is left unread and the report says so.
MAX_FETCH_BYTES = 5_000_000
MAX_REDIRECTS = 5
USER_AGENT = "ctxmode (local context indexer; +https://github.com/ctxmode)"

BLOCKED_HOSTS = frozenset(
    {
        "metadata",
        "metadata.google.internal",
        "metadata.goog",
        "metadata.azure.com",
        "instance-data",
        "instance-data.ec2.internal",
    }
)
BLOCKED_NETWORKS = tuple(
    ipaddress.ip_network(n)
    for n in (
        "169.254.0.0/16",  # IPv4 link-local: AWS, GCP, Azure, OpenStack metadata
        "fe80::/10",  # IPv6 link-local
        "fd00:ec2::254/128",  # AWS metadata over IPv6
        "100.100.100.200/32",  # Alibaba Cloud metadata
    )
)


@dataclass(frozen=True)
class FetchReport:
    """What a fetch stored; ``summary`` is the text meant for the agent."""

    url: str
    source: str
    status_code: int | None
    content_type: str
    bytes_fetched: int
    chunks: int
    from_cache: bool
    truncated: bool
    fetched_at: int
    expires_at: int
    summary: str
    sections: tuple[str, ...] = field(default_factory=tuple)

    @property
    def bytes_returned(self) -> int:
        return len(self.summary.encode("utf-8"))

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "source": self.source,
            "status_code": self.status_code,
            "content_type": self.content_type,
            "bytes_fetched": self.bytes_fetched,
            "bytes_returned": self.bytes_returned,
            "chunks": self.chunks,
            "from_cache": self.from_cache,
            "truncated": self.truncated,
            "fetched_at": self.fetched_at,
            "expires_at": self.expires_at,
            "sections": list(self.sections),
            "summary": self.summary,
        }


# -- address checks --------------------------------------------------------------------------


def blocked_address(address: str) -> bool:
    """True for link-local, cloud-metadata, unspecified and multicast addresses."""
    try:
        ip = ipaddress.ip_address(address.split("%", 1)[0])
    except ValueError:
        return True
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_link_local or ip.is_unspecified or ip.is_multicast:
        return True
    return any(ip in net for net in BLOCKED_NETWORKS if net.version == ip.version)


def check_url(url: object) -> tuple[str, str, int]:
    """Validate a URL and every address its host resolves to; return (url, host, port)."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidInput("url must be a non-empty string such as https://example.com/docs")
    text = url.strip()
    parts = urlsplit(text)
    scheme = parts.scheme.lower()
    if scheme not in {"http", "https"}:
        raise InvalidInput(
            f"only http and https URLs can be fetched, not {scheme or 'a bare path'!r}; "
            "index local files with `ctxmode index PATH`"
        )
    host = (parts.hostname or "").rstrip(".").lower()
    if not host:
        raise InvalidInput(f"{text!r} has no host; pass a full URL such as https://example.com/")
    if host in BLOCKED_HOSTS:
        raise InvalidInput(f"refusing {host}: cloud metadata endpoints are never fetched")
    try:
        port = parts.port or (443 if scheme == "https" else 80)
    except ValueError as exc:
        raise InvalidInput(f"{text!r} has an invalid port") from exc
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise InvalidInput(f"cannot resolve {host} ({exc}); check the URL and the network") from exc
    for info in infos:
        address = str(info[4][0])
        if blocked_address(address):
            raise InvalidInput(
                f"refusing {host}: it resolves to {address}, a link-local or cloud-metadata address"
            )
    clean = urlunsplit((scheme, parts.netloc, parts.path or "/", parts.query, ""))
    return clean, host, port


# -- conversion ------------------------------------------------------------------------------

_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)


def html_to_markdown(html: str) -> str:
    """Markdown of an HTML page (scripts and styles dropped; ATX headings)."""
    from markdownify import markdownify

    text: str = markdownify(html, heading_style="ATX", bullets="-")
    # markdownify keeps the blank lines of the source layout; three or more say nothing.
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _convert(body: bytes, content_type: str, charset: str | None) -> tuple[str, str | None]:
    """(text, chunking format) for a response body, or InvalidInput for binary content."""
    mime = content_type.split(";", 1)[0].strip().lower()
    if b"\0" in body[:4096] and "json" not in mime and not mime.startswith("text/"):
        raise InvalidInput(f"the URL serves binary content ({mime or 'unknown type'}); not indexed")
    text = body.decode(charset or "utf-8", errors="replace")
    if mime in {"text/html", "application/xhtml+xml"} or (
        not mime and text.lstrip()[:15].lower().startswith(("<!doctype html", "<html"))
    ):
        # Redact the HTML itself too: the conversion drops unknown tags such as <private>
        # and keeps their text, which redaction of the markdown could no longer recognise.
        return html_to_markdown(redact(text)), "markdown"
    if mime == "application/json" or mime.endswith("+json"):
        return text, "json"
    if mime.startswith("text/") or not mime or mime in {"application/xml", "application/yaml"}:
        return text, None
    raise InvalidInput(f"the URL serves {mime}, which ctxmode does not index (text, HTML, JSON)")


# -- fetching --------------------------------------------------------------------------------


def _record(store: Database, report: FetchReport) -> None:
    with store.transaction() as conn:
        conn.execute(
            "INSERT INTO sandbox_runs(kind, language, bytes_produced, bytes_returned, "
            "source_label, exit_code, duration_ms, created_at) VALUES ('fetch', NULL, ?, ?, ?, "
            "?, NULL, ?)",
            (
                report.bytes_fetched,
                report.bytes_returned,
                report.source,
                report.status_code,
                int(time.time()),
            ),
        )


def _summary(
    url: str, label: str, chunks: int, size: int, titles: list[str], cached: bool, cut: bool
) -> str:
    how = "cached copy (not fetched again)" if cached else f"{size} bytes fetched"
    lines = [f"Indexed {url} as source {label!r}: {chunks} chunks, {how}."]
    if cut:
        lines.append(f"The body was cut at {MAX_FETCH_BYTES} bytes.")
    if titles:
        shown = titles[:15]
        more = f" (+{len(titles) - len(shown)} more)" if len(titles) > len(shown) else ""
        lines.append("Sections: " + "; ".join(shown) + more)
    lines.append(f'Search it: search(queries=["..."], source="{label}").')
    return "\n".join(lines)


def fetch_and_index(
    store: Database,
    url: str,
    source: str | None = None,
    ttl_s: int = DEFAULT_TTL_S,
    *,
    force: bool = False,
    timeout: float = DEFAULT_TIMEOUT_S,
    max_bytes: int = MAX_FETCH_BYTES,
    now: int | None = None,
) -> FetchReport:
    """Fetch ``url`` and index it as source ``source`` (default: the URL); see module doc.

    Loopback addresses are allowed (local doc servers, tests); link-local and cloud-metadata
    addresses are refused. A copy younger than ``ttl_s`` is reused unless ``force``.
    """
    clean, _host, _port = check_url(url)
    shown_url = redact(clean)
    label = source.strip() if isinstance(source, str) and source.strip() else shown_url
    if isinstance(ttl_s, bool) or not isinstance(ttl_s, int) or ttl_s < 0:
        raise InvalidInput(f"ttl_s must be a non-negative number of seconds, got {ttl_s!r}")
    ts = int(now if now is not None else time.time())
    if not force:
        cached = store.conn.execute(
            "SELECT fetched_at, expires_at FROM sources WHERE label = ? AND kind = 'url' "
            "AND location = ? AND expires_at > ?",
            (label, shown_url, ts),
        ).fetchone()
        if cached:
            info = get_source(store, label)
            titles = [t for t, _ in source_chunks(store, label)]
            report = FetchReport(
                url=shown_url,
                source=label,
                status_code=None,
                content_type="",
                bytes_fetched=0,
                chunks=info.chunks,
                from_cache=True,
                truncated=False,
                fetched_at=int(cached[0] or 0),
                expires_at=int(cached[1]),
                summary=_summary(shown_url, label, info.chunks, 0, titles, True, False),
                sections=tuple(titles[:50]),
            )
            _record(store, report)
            return report
    status, content_type, charset, body, cut = _download(clean, timeout, max_bytes)
    text, fmt = _convert(body, content_type, charset)
    if cut:  # the cap may have cut a secret in two: drop the cut word before redaction
        text = drop_cut_tail(text)
    if not text.strip():
        raise InvalidInput(f"{shown_url} returned an empty document; nothing to index")
    index_report = index_content(
        store,
        text,
        label,
        "url",
        fmt=fmt,
        location=shown_url,
        fetched_at=ts,
        expires_at=ts + ttl_s,
        now=ts,
    )
    titles = [t for t, _ in source_chunks(store, label)]
    report = FetchReport(
        url=shown_url,
        source=label,
        status_code=status,
        content_type=content_type,
        bytes_fetched=len(body),
        chunks=index_report.chunks,
        from_cache=False,
        truncated=cut,
        fetched_at=ts,
        expires_at=ts + ttl_s,
        summary=_summary(shown_url, label, index_report.chunks, len(body), titles, False, cut),
        sections=tuple(titles[:50]),
    )
    _record(store, report)
    return report


def _download(url: str, timeout: float, max_bytes: int) -> tuple[int, str, str | None, bytes, bool]:
    """GET with manual redirects; every hop and the connected peer are checked."""
    import httpx

    current = url
    headers = {"User-Agent": USER_AGENT, "Accept": "text/html, application/json, text/*, */*"}
    try:
        with httpx.Client(timeout=timeout, follow_redirects=False, trust_env=False) as client:
            for _hop in range(MAX_REDIRECTS + 1):
                with client.stream("GET", current, headers=headers) as response:
                    _check_peer(response)
                    if response.is_redirect:
                        target = response.headers.get("location", "")
                        current, _h, _p = check_url(urljoin(current, target))
                        continue
                    if response.status_code >= 400:
                        raise InvalidInput(
                            f"{redact(current)} answered HTTP {response.status_code}; check the URL"
                        )
                    body = bytearray()
                    cut = False
                    for block in response.iter_bytes():
                        body.extend(block)
                        if len(body) > max_bytes:
                            del body[max_bytes:]
                            cut = True
                            break
                    return (
                        response.status_code,
                        response.headers.get("content-type", ""),
                        response.charset_encoding,
                        bytes(body),
                        cut,
                    )
    except httpx.HTTPError as exc:
        raise InvalidInput(
            f"could not fetch {redact(current)} ({type(exc).__name__}: {exc}); check the URL "
            "and the network"
        ) from exc
    raise InvalidInput(f"{redact(url)} redirected more than {MAX_REDIRECTS} times; not fetched")


def _check_peer(response: Any) -> None:
    """Refuse a response whose connection went to a blocked address (DNS rebinding)."""
    stream = response.extensions.get("network_stream")
    if stream is None:
        return
    peer = stream.get_extra_info("server_addr")
    if peer and blocked_address(str(peer[0])):
        raise InvalidInput(
            f"refusing {response.url.host}: the connection went to {peer[0]}, a link-local or "
            "cloud-metadata address"
        )
