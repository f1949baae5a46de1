"""Cross-site protection of the viewer: Host and Origin checks, CSRF token, response headers.

Threats and the answer to each:
- another page in the user's browser posting a form to 127.0.0.1 (CSRF): every POST must carry
  the per-process token (only pages served by this process contain it; the same-origin policy
  keeps other sites from reading them), and a foreign ``Origin`` or a cross-site
  ``Sec-Fetch-Site`` is refused before the body is read;
- DNS rebinding (a foreign name resolving to 127.0.0.1, making the browser treat our pages as
  same-origin with the attacker's): the ``Host`` header must name this server exactly
  (``127.0.0.1:<port>`` or ``localhost:<port>``), on every request, reads included;
- framing (clickjacking) and content sniffing: CSP ``frame-ancestors 'none'``, no inline script.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
#: Name of the hidden form field holding the CSRF token.
CSRF_FIELD = "csrf_token"

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (
        b"content-security-policy",
        b"default-src 'none'; style-src 'self'; img-src 'self' data:; script-src 'self'; "
        b"form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    ),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    # "no-referrer" would make Chromium send "Origin: null" on our own form posts.
    (b"referrer-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
)


class Forbidden(Exception):
    """A request that fails the cross-site checks; the message says which check."""


def allowed_hosts(port: int) -> frozenset[str]:
    """``Host`` header values that name this server."""
    names = {f"127.0.0.1:{port}", f"localhost:{port}"}
    if port == 80:
        names |= {"127.0.0.1", "localhost"}
    return frozenset(names)


def allowed_origins(port: int) -> frozenset[str]:
    """``Origin`` header values of pages served by this server."""
    return frozenset(f"http://{host}" for host in allowed_hosts(port))


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value).decode("latin-1")
    return None


def check_request(scope: Scope, port: int) -> None:
    """Raise ``Forbidden`` unless Host (always) and Origin/Sec-Fetch-Site (writes) are ours."""
    host = (_header(scope, b"host") or "").strip().lower()
    if host not in allowed_hosts(port):
        raise Forbidden(
            f"unexpected Host header {host!r}; open the viewer at http://127.0.0.1:{port}/"
        )
    if scope.get("method", "GET") in SAFE_METHODS:
        return
    origin = _header(scope, b"origin")
    if origin is not None and origin.strip().lower() not in allowed_origins(port):
        raise Forbidden(f"request from a foreign origin {origin!r} refused")
    fetch_site = _header(scope, b"sec-fetch-site")
    if fetch_site is not None and fetch_site.strip().lower() not in {"same-origin", "none"}:
        raise Forbidden(f"cross-site request refused (Sec-Fetch-Site: {fetch_site})")


def check_token(expected: str, given: object) -> None:
    """Raise ``Forbidden`` unless ``given`` equals the process's CSRF token."""
    if not isinstance(given, str) or not hmac.compare_digest(given.encode(), expected.encode()):
        raise Forbidden("missing or wrong form token; reload the page and submit again")


class GuardMiddleware:
    """Checks every HTTP request (``check_request``) and adds the security headers.

    The port comes from the listening socket (``scope["server"]``) unless fixed, so the app
    also works when the OS picked the port (``--port 0``).
    """

    def __init__(
        self,
        app: ASGIApp,
        port: int | None = None,
        on_forbidden: Callable[[Scope, Forbidden], Awaitable[tuple[int, bytes]]] | None = None,
    ) -> None:
        self.app = app
        self.port = port
        self.on_forbidden = on_forbidden

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        server = scope.get("server") or (None, None)
        port = self.port if self.port is not None else int(server[1] or 0)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                present = {bytes(k).lower() for k, _ in headers}
                headers.extend(h for h in SECURITY_HEADERS if h[0] not in present)
                message["headers"] = headers
            await send(message)

        try:
            check_request(scope, port)
        except Forbidden as exc:
            status, body = 403, f"Forbidden: {exc}".encode()
            if self.on_forbidden is not None:
                status, body = await self.on_forbidden(scope, exc)
            await send_with_headers(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [
                        (b"content-type", b"text/html; charset=utf-8"),
                        (b"content-length", str(len(body)).encode()),
                    ],
                }
            )
            await send_with_headers({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send_with_headers)
