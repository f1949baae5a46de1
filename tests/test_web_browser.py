"""The viewer in a real browser: ``ctxmode ui`` in a subprocess, driven by headless Chromium.

Playwright drives Debian's ``chromium`` (never a downloaded browser). Without that binary the
module is skipped with the reason; ``.ci/run`` installs it.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import re
import socket
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from conftest import CTXMODE, REPO
from ctxmode import Store
from seed_data import SESSION, Seeded, seed

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = REPO / "artifacts"
LAUNCH_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

if not CHROMIUM.exists():
    pytest.skip(
        f"no browser: {CHROMIUM} is missing (install Debian's chromium: apt-get install chromium)",
        allow_module_level=True,
    )

from playwright.sync_api import Browser, Page, expect, sync_playwright  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, url: str, db: Path, root: Path, seeded: Seeded) -> None:
        self.url = url
        self.db = db
        self.root = root
        self.seeded = seeded

    def store(self) -> Store:
        return Store.open(self.db, create=False)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("browser")
    root = base / "proj"
    (root / ".git").mkdir(parents=True)
    db = root / ".context" / "context.db"
    with Store.open(db) as store:
        seeded = seed(store)
    port = free_port()
    env = dict(os.environ, HOME=str(base / "home"))
    env.pop("CTXMODE_DB", None)
    log = (base / "ui.log").open("w")
    assert CTXMODE
    proc = subprocess.Popen(
        [CTXMODE, "ui", "--port", str(port)], cwd=root, env=env, stdout=log, stderr=log
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(url + "/", timeout=1).status_code == 200:
                    break
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                pytest.fail("ctxmode ui did not start: " + (base / "ui.log").read_text())
            time.sleep(0.1)
        yield Server(url, db, root, seeded)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=LAUNCH_ARGS)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    # Console errors catch CSP violations and missing assets; the 400/403 pages some tests
    # expect also log "Failed to load resource", which is not a defect.
    expected = re.compile(r"Failed to load resource: .* status of 40[03]")
    pg.on(
        "console",
        lambda msg: (
            errors.append(msg.text)
            if msg.type == "error" and not expected.search(msg.text)
            else None
        ),
    )
    try:
        yield pg
    finally:
        context.close()
    assert not errors, f"browser errors: {errors}"


def test_every_page_loads_with_seeded_data(page: Page, server: Server) -> None:
    s = server.seeded
    checks: list[tuple[str, str, str]] = [
        ("/", "h1", "Overview"),
        ("/contexts", "#context-list", "Sessions live in Redis"),
        (f"/contexts/{s.decision}", "#context-content", "Sessions live in Redis"),
        ("/contexts/new", "h1", "New context"),
        ("/tasks", "#task-tree", "Rotate refresh tokens"),
        ("/sessions", "#timeline", "src/auth.py"),
        ("/search?q=argon2id", "#hits", "argon2id"),
    ]
    for path, selector, text in checks:
        response = page.goto(server.url + path)
        assert response is not None and response.status == 200, path
        expect(page.locator(selector)).to_contain_text(text)
    # the stylesheet applied (served from the package, no network)
    page.goto(server.url + "/")
    bg = page.evaluate("getComputedStyle(document.querySelector('header.top')).backgroundColor")
    assert bg == "rgb(29, 31, 33)"
    expect(page.locator("#events-chart rect.bar")).to_have_count(30)
    expect(page.locator("#snapshot")).to_have_count(0)
    page.goto(server.url + f"/sessions?session={SESSION}")
    expect(page.locator("#snapshot-size")).to_contain_text("2048-byte budget")
    expect(page.locator("#snapshot")).to_contain_text("session_knowledge")


def test_overview_screenshot_is_saved(page: Page, server: Server) -> None:
    page.goto(server.url + "/")
    expect(page.locator("#contexts-by-type")).to_be_visible()
    ARTIFACTS.mkdir(exist_ok=True)
    target = ARTIFACTS / "viewer-overview.png"
    target.unlink(missing_ok=True)
    page.screenshot(path=str(target), full_page=True)
    data = target.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


def test_filter_contexts(page: Page, server: Server) -> None:
    s = server.seeded
    page.goto(server.url + "/contexts")
    page.select_option("#context-filters select[name=type]", "decision")
    page.check("#context-filters input[name=live]")
    page.click("#context-filters button[type=submit]")
    page.wait_for_url(re.compile(r"type=decision"))
    rows = page.locator("#context-list tbody tr")
    expect(rows).to_have_count(1)
    assert rows.first.get_attribute("data-id") == str(s.decision)

    page.goto(server.url + "/contexts")
    page.fill("#context-filters input[name=file]", "src/auth.py")
    page.click("#context-filters button[type=submit]")
    ids = {r.get_attribute("data-id") for r in page.locator("#context-list tbody tr").all()}
    assert ids == {str(s.decision), str(s.constraint)}

    page.fill("#context-filters input[name=file]", "")
    page.fill("#context-filters input[name=q]", "redis")
    page.click("#context-filters button[type=submit]")
    expect(page.locator("#context-list")).to_contain_text("Redis docs")

    page.goto(server.url + "/contexts?task=abc")
    expect(page.locator("#error-message")).to_contain_text("task must be a whole number")


def test_search_from_the_header(page: Page, server: Server) -> None:
    page.goto(server.url + "/tasks")
    page.fill("header input[name=q]", "argon2id password")
    page.press("header input[name=q]", "Enter")
    page.wait_for_url(re.compile(r"/search\?q="))
    expect(page.locator("#hits li").first).to_contain_text("argon2id")
    marks = page.locator("#hits mark").all_inner_texts()
    assert {m.lower() for m in marks} >= {"argon2id"}


def test_edit_a_context_changes_the_db(page: Page, server: Server) -> None:
    s = server.seeded
    page.goto(server.url + f"/contexts/{s.snippet}")
    page.fill("#context-edit textarea[name=content]", "POOL = 8 connections per worker <b>")
    page.select_option("#context-edit select[name=type]", "convention")
    page.click("#context-edit button[type=submit]")
    expect(page.locator(".notice")).to_have_text("Context saved.")
    expect(page.locator("#context-content")).to_have_text("POOL = 8 connections per worker <b>")
    with server.store() as store:
        c = store.get_context(s.snippet)
    assert (c.type, c.content) == ("convention", "POOL = 8 connections per worker <b>")

    # bad input shows a message, not a stack trace, and changes nothing
    page.goto(server.url + f"/contexts/{s.snippet}")
    page.fill("#context-edit textarea[name=metadata]", "{broken")
    page.click("#context-edit button[type=submit]")
    expect(page.locator("#error-message")).to_contain_text("metadata is not valid JSON")
    with server.store() as store:
        assert store.get_context(s.snippet).content == "POOL = 8 connections per worker <b>"


def test_change_task_status(page: Page, server: Server) -> None:
    s = server.seeded
    page.goto(server.url + "/tasks")
    item = page.locator(f"#task-{s.child_task}")
    item.locator("select[name=status]").select_option("blocked")
    item.locator("button[type=submit]").click()
    expect(page.locator(".notice")).to_have_text("Task status changed.")
    expect(page.locator(f"#task-{s.child_task}")).to_have_attribute("data-status", "blocked")
    with server.store() as store:
        assert store.get_task(s.child_task).status == "blocked"


def test_create_supersede_and_delete_with_confirmation(page: Page, server: Server) -> None:
    page.goto(server.url + "/contexts/new")
    page.select_option("#context-create select[name=type]", "issue")
    page.fill("#context-create textarea[name=content]", "Login loops when the cookie expires")
    page.fill("#context-create textarea[name=files]", "src/auth.py")
    page.click("#context-create button[type=submit]")
    expect(page.locator(".notice")).to_have_text("Context created.")
    created = int(page.url.split("/contexts/")[1].split("?")[0])

    page.locator("summary", has_text="Supersede").click()
    page.fill("#context-supersede textarea[name=content]", "Login loops fixed by refreshing early")
    page.click("#context-supersede button[type=submit]")
    expect(page.locator(".notice")).to_have_text("Context superseded.")
    newer = int(page.url.split("/contexts/")[1].split("?")[0])
    expect(page.locator("#history li")).to_have_count(2)

    page.goto(server.url + f"/contexts/{created}")
    page.click("#delete-link")
    expect(page.locator("h1")).to_contain_text(f"Delete context #{created}?")
    page.click("#confirm-delete button[type=submit]")
    expect(page.locator(".notice")).to_have_text("Context deleted.")
    with server.store() as store:
        ids = {c.id for c in store.list_contexts()}
    assert created not in ids and newer in ids


class _Attacker(http.server.BaseHTTPRequestHandler):
    """A page on another local port that tries to drive the viewer with an auto-submitted form."""

    body = b""

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, format: str, *args: Any) -> None:
        return


def test_another_local_page_cannot_drive_the_viewer(page: Page, server: Server) -> None:
    s = server.seeded
    # Even with a leaked token the foreign Origin is refused; without it, the token check is.
    html = page.goto(server.url + "/tasks")
    assert html is not None
    leaked = page.locator("input[name=csrf_token]").first.get_attribute("value")
    for tok in (leaked, ""):
        _Attacker.body = (
            f'<form id="f" method="post" action="{server.url}/tasks/{s.other_task}/status">'
            f'<input name="status" value="cancelled"><input name="csrf_token" value="{tok}">'
            '</form><script>document.getElementById("f").submit()</script>'
        ).encode()
        attacker = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Attacker)
        thread = threading.Thread(target=attacker.serve_forever, daemon=True)
        thread.start()
        try:
            with page.expect_response(re.compile(r"/status$")) as info:
                page.goto(f"http://127.0.0.1:{attacker.server_address[1]}/")
            assert info.value.status == 403
        finally:
            attacker.shutdown()
            attacker.server_close()
            thread.join()
    with server.store() as store:
        assert store.get_task(s.other_task).status == "pending"


def test_the_viewer_follows_a_chinese_browser(browser: Browser, server: Server) -> None:
    b = browser.browser_type.launch(
        executable_path=str(CHROMIUM), headless=True, args=[*LAUNCH_ARGS, "--lang=zh-CN"]
    )
    try:
        # Playwright sends its context's locale as Accept-Language (en-US unless told):
        # --lang sets the browser's UI language, the locale what a zh-CN user's sends.
        pg = b.new_context(locale="zh-CN").new_page()
        pg.goto(server.url + "/")
        assert pg.evaluate("navigator.language") == "zh-CN"
        assert pg.locator("html").get_attribute("lang") == "zh-CN"
        nav = pg.locator("header nav").inner_text()
        assert all(word in nav for word in ("概览", "知识条目", "任务", "会话", "搜索"))
        assert pg.locator("h1").inner_text() == "概览"
        pg.goto(server.url + f"/contexts/{server.seeded.stale}")
        assert "已过期" in pg.locator("#stale").inner_text()
        assert "直接编辑" in pg.content()
        pg.goto(server.url + "/contexts")
        assert pg.locator("#context-list thead").inner_text().split()[:3] == [
            "#",
            "类型",
            "内容",
        ]
    finally:
        b.close()


def test_an_english_browser_keeps_english(page: Page, server: Server) -> None:
    page.goto(server.url + "/")
    assert page.locator("h1").inner_text() == "Overview"
    assert "Contexts" in page.locator("header nav").inner_text()
