"""The viewer over HTTP (in-process ASGI client): every route, bad input, cross-site protection."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from ctxmode import Store
from ctxmode.web import create_app
from seed_data import OTHER_SESSION, SESSION, Seeded, seed

BASE = "http://127.0.0.1:8765"
ORIGIN = "http://127.0.0.1:8765"


@pytest.fixture
def seeded(store: Store) -> Seeded:
    return seed(store)


@pytest.fixture
def client(store: Store, seeded: Seeded) -> Iterator[TestClient]:
    with TestClient(create_app(store.path, store.root), base_url=BASE) as c:
        yield c


def token(client: TestClient) -> str:
    page = client.get("/contexts/new").text
    match = re.search(r'name="csrf_token" value="([^"]+)"', page)
    assert match, "form token missing from the page"
    return match.group(1)


def post(client: TestClient, url: str, data: dict[str, str], **kw: object):  # type: ignore[no-untyped-def]
    return client.post(
        url, data={"csrf_token": token(client), **data}, follow_redirects=False, **kw
    )  # type: ignore[arg-type]


def error_of(html: str) -> str:
    match = re.search(r'id="error-message">([^<]*)<', html)
    return match.group(1) if match else ""


def dump(store: Store) -> list[tuple[object, ...]]:
    """Everything a form could change, for 'state unchanged' assertions."""
    contexts = [
        (c.id, c.type, c.content, c.superseded_by, c.metadata) for c in store.list_contexts()
    ]
    tasks = [(t.id, t.name, t.status, t.parent_id) for t in store.list_tasks()]
    return [*contexts, *tasks]


# -- pages -----------------------------------------------------------------------------------


def test_overview_shows_counts_chart_sessions_and_snapshot(
    client: TestClient, seeded: Seeded
) -> None:
    r = client.get("/")
    assert r.status_code == 200
    html = r.text
    by_type = re.search(r'id="contexts-by-type">(.*?)</table>', html, re.S)
    assert by_type and re.search(r"decision</a></th><td>2<", by_type.group(1))
    assert re.search(r"in_progress</span></th><td>1<", html)
    assert SESSION[:16] in html and OTHER_SESSION[:16] in html
    assert re.search(
        r'id="last-snapshot"><a href="/sessions\?session=sess-alpha-0001">\d+ / 2048 bytes', html
    )
    assert html.count('<rect class="bar"') == 30
    assert re.search(r"<title>\d{4}-\d\d-\d\d: 3 events</title>", html)  # today's file/error/intent


def test_contexts_list_and_each_filter(client: TestClient, seeded: Seeded) -> None:
    def ids(query: str) -> set[int]:
        r = client.get("/contexts" + query)
        assert r.status_code == 200, error_of(r.text)
        return {int(i) for i in re.findall(r'<tr class="tier-\d" data-id="(\d+)"', r.text)}

    s = seeded
    everything = {s.decision, s.old_decision, s.constraint, s.snippet, s.reference, s.stale}
    assert ids("") == everything
    assert ids("?type=decision") == {s.decision, s.old_decision}
    assert ids("?type=decision&live=1") == {s.decision}
    assert ids("?owner=alice") == {s.decision, s.snippet}
    assert ids(f"?task={s.root_task}") == {s.decision, s.old_decision}
    assert ids("?file=src/auth.py") == {s.decision, s.constraint}
    assert ids("?stale=yes") == {s.stale}
    assert s.stale not in ids("?stale=no")
    assert ids("?scope=global") == everything
    assert ids("?scope=session") == set()
    assert ids("?q=redis") == {s.decision, s.reference}
    assert ids("?q=redis&owner=bob") == {s.reference}
    assert ids("?q=zzzqqq") == set()


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("?task=abc", "task must be a whole number"),
        ("?stale=maybe", "stale must be yes, no or empty"),
        ("?type=bogus", "unknown context type"),
        ("?scope=team", "unknown scope"),
        ("?file=/etc/passwd", "outside the project root"),
        ("?page=x", "page must be a whole number"),
        (f"?page={10**20}", "page must be a whole number"),  # past SQLite's integers
        (f"?task={10**20}", "task must be a whole number"),
        ("?task=987654", "no task with id 987654"),
    ],
)
def test_contexts_bad_filters_show_a_message(client: TestClient, query: str, message: str) -> None:
    r = client.get("/contexts" + query)
    assert r.status_code == (404 if "no task" in message else 400)
    assert message in error_of(r.text)
    assert "Traceback" not in r.text


def test_context_detail_shows_links_history_and_reads(
    client: TestClient, seeded: Seeded, store: Store
) -> None:
    store.query_context(task_id=seeded.root_task)  # agents read it once
    r = client.get(f"/contexts/{seeded.decision}")
    assert r.status_code == 200
    assert "Sessions live in Redis" in r.text
    assert "src/auth.py" in r.text and "Ship the login flow" in r.text
    history = re.search(r'<ol class="history" id="history">(.*?)</ol>', r.text, re.S)
    assert history
    assert re.findall(r'href="/contexts/(\d+)"', history.group(1)) == [
        str(seeded.old_decision),
        str(seeded.decision),
    ]
    assert re.search(r'id="access-count">1 times', r.text)
    old = client.get(f"/contexts/{seeded.old_decision}")
    assert f'superseded by <a href="/contexts/{seeded.decision}">' in old.text


def test_unknown_context_and_unknown_page_are_404_pages(client: TestClient) -> None:
    r = client.get("/contexts/99999")
    assert r.status_code == 404 and "no context with id 99999" in error_of(r.text)
    assert client.get("/contexts/abc").status_code == 404
    r = client.get("/no/such/page")
    assert r.status_code == 404 and "No such page" in r.text


def test_content_is_escaped(client: TestClient, store: Store) -> None:
    evil = store.write_context("issue", '<script>alert(1)</script> "quoted" & <b>bold</b>').id
    for url in (f"/contexts/{evil}", "/contexts", "/search?q=alert", "/sessions"):
        html = client.get(url).text
        assert "<script>alert(1)" not in html
        assert "<b>bold</b>" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in client.get(f"/contexts/{evil}").text
    # event data from hooks is escaped in the timeline too
    assert "look at &lt;redirects&gt; &amp; cookies" in client.get("/sessions").text


# -- writes ----------------------------------------------------------------------------------


def test_create_context(client: TestClient, store: Store, seeded: Seeded) -> None:
    r = post(
        client,
        "/contexts",
        {
            "type": "interface",
            "content": "POST /login returns 303 to /home",
            "scope": "global",
            "task": str(seeded.child_task),
            "files": "src/auth.py\nsrc/db.py",
            "relation": "defines",
            "owner": "carol",
            "metadata": '{"source": "review"}',
        },
    )
    assert r.status_code == 303
    new_id = int(r.headers["location"].split("/")[2].split("?")[0])
    detail = store.context_detail(new_id)
    assert detail.context.content == "POST /login returns 303 to /home"
    assert detail.context.owner == "carol" and detail.context.metadata == {"source": "review"}
    assert [t.task_id for t in detail.tasks] == [seeded.child_task]
    assert {(f.path, f.relation) for f in detail.files} == {
        ("src/auth.py", "defines"),
        ("src/db.py", "defines"),
    }
    page = client.get(r.headers["location"])
    assert "Context created." in page.text


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"type": "bogus", "content": "x"}, "unknown context type"),
        ({"type": "decision", "content": "   "}, "content must be a non-empty string"),
        ({"type": "decision", "content": "x", "metadata": "{nope"}, "metadata is not valid JSON"),
        ({"type": "decision", "content": "x", "metadata": "[1]"}, "must be a JSON object"),
        ({"type": "decision", "content": "x", "task": "7x"}, "task must be a whole number"),
        ({"type": "decision", "content": "x", "task": "999"}, "no task with id 999"),
        ({"type": "decision", "content": "x", "files": "../../etc/passwd"}, "outside the project"),
        ({"type": "decision", "content": "x", "scope": "session"}, "needs a session id"),
    ],
)
def test_create_context_bad_input_changes_nothing(
    client: TestClient, store: Store, fields: dict[str, str], message: str
) -> None:
    before = dump(store)
    r = post(client, "/contexts", fields)
    assert r.status_code in (400, 404)
    assert message in error_of(r.text), error_of(r.text)
    assert dump(store) == before


def test_edit_context(client: TestClient, store: Store, seeded: Seeded) -> None:
    r = post(
        client,
        f"/contexts/{seeded.snippet}/edit",
        {"type": "convention", "content": "POOL is 10 per worker", "metadata": '{"k": 1}'},
    )
    assert r.status_code == 303 and r.headers["location"].endswith("?done=updated")
    c = store.get_context(seeded.snippet)
    assert (c.type, c.content, c.metadata) == ("convention", "POOL is 10 per worker", {"k": 1})
    assert "Context saved." in client.get(r.headers["location"]).text


def test_edit_context_bad_input_changes_nothing(
    client: TestClient, store: Store, seeded: Seeded
) -> None:
    before = dump(store)
    r = post(client, f"/contexts/{seeded.snippet}/edit", {"type": "nope", "content": "y"})
    assert r.status_code == 400 and "unknown context type" in error_of(r.text)
    r = post(client, "/contexts/4242/edit", {"type": "issue", "content": "y"})
    assert r.status_code == 404
    assert dump(store) == before


def test_supersede_with_new_version_and_by_existing(
    client: TestClient, store: Store, seeded: Seeded
) -> None:
    r = post(
        client,
        f"/contexts/{seeded.constraint}/supersede",
        {
            "type": "constraint",
            "content": "Passwords use argon2id (m=64MB)",
            "files": "src/auth.py",
        },
    )
    assert r.status_code == 303
    new_id = int(r.headers["location"].split("/")[2].split("?")[0])
    assert store.get_context(seeded.constraint).superseded_by == new_id
    assert store.context_detail(new_id).history == (seeded.constraint, new_id)

    r = post(client, f"/contexts/{seeded.reference}/supersede", {"by": str(seeded.snippet)})
    assert r.status_code == 303
    assert store.get_context(seeded.reference).superseded_by == seeded.snippet


def test_supersede_bad_input_changes_nothing(
    client: TestClient, store: Store, seeded: Seeded
) -> None:
    before = dump(store)
    r = post(client, f"/contexts/{seeded.reference}/supersede", {"by": str(seeded.reference)})
    assert r.status_code == 400 and "cannot supersede itself" in error_of(r.text)
    r = post(client, f"/contexts/{seeded.reference}/supersede", {"by": "77777"})
    assert r.status_code == 404
    r = post(client, f"/contexts/{seeded.reference}/supersede", {"by": "x1"})
    assert r.status_code == 400 and "whole number" in error_of(r.text)
    # a cycle: the old decision already leads to the new one
    r = post(client, f"/contexts/{seeded.decision}/supersede", {"by": str(seeded.old_decision)})
    assert r.status_code == 400 and "no cycles" in error_of(r.text)
    assert dump(store) == before


def test_delete_needs_confirmation(client: TestClient, store: Store, seeded: Seeded) -> None:
    page = client.get(f"/contexts/{seeded.reference}/delete")
    assert page.status_code == 200 and "Redis docs" in page.text
    before = dump(store)
    r = post(client, f"/contexts/{seeded.reference}/delete", {})
    assert r.status_code == 400 and "confirmation" in error_of(r.text)
    assert dump(store) == before
    r = post(client, f"/contexts/{seeded.reference}/delete", {"confirm": "yes"})
    assert r.status_code == 303 and r.headers["location"] == "/contexts?done=deleted"
    assert seeded.reference not in {c.id for c in store.list_contexts()}
    assert client.get(f"/contexts/{seeded.reference}/delete").status_code == 404


def test_tasks_tree_with_links_and_status_change(
    client: TestClient, store: Store, seeded: Seeded
) -> None:
    html = client.get("/tasks").text
    order = [int(i) for i in re.findall(r'<li id="task-(\d+)"', html)]
    assert order == [seeded.root_task, seeded.child_task, seeded.other_task]
    assert f'id="task-{seeded.child_task}" class="task depth-1"' in html
    child = html.split(f'id="task-{seeded.child_task}"')[1].split("</li>\n  <li")[0]
    assert "argon2id" in child and "src/auth.py" in child

    r = post(client, f"/tasks/{seeded.other_task}/status", {"status": "completed"})
    assert r.status_code == 303
    assert store.get_task(seeded.other_task).status == "completed"
    assert 'data-status="completed"' in client.get("/tasks").text


def test_task_status_and_create_bad_input(client: TestClient, store: Store, seeded: Seeded) -> None:
    before = dump(store)
    r = post(client, f"/tasks/{seeded.other_task}/status", {"status": "done-ish"})
    assert r.status_code == 400 and "unknown task status" in error_of(r.text)
    r = post(client, "/tasks/4040/status", {"status": "completed"})
    assert r.status_code == 404
    r = post(client, "/tasks", {"name": "  "})
    assert r.status_code == 400 and "task name" in error_of(r.text)
    r = post(client, "/tasks", {"name": "orphan", "parent": "9999"})
    assert r.status_code == 404
    assert dump(store) == before
    r = post(client, "/tasks", {"name": "Write the docs", "parent": str(seeded.root_task)})
    assert r.status_code == 303
    assert [(t.name, t.parent_id) for t in store.list_tasks() if t.name == "Write the docs"] == [
        ("Write the docs", seeded.root_task)
    ]


def test_sessions_timeline_filters_and_snapshot(client: TestClient, store: Store) -> None:
    html = client.get("/sessions").text  # the most recently active session by default
    assert f"Session <code>{SESSION}</code>" in html
    cats = re.findall(r'<li class="event p(\d)" data-category="([a-z_]+)"', html)
    assert {c for _, c in cats} == {"prompt", "file", "error", "intent"}
    assert ("1", "file") in cats and ("4", "intent") in cats and ("2", "error") in cats
    size = re.search(r'id="snapshot-size" class="within">\s*Stored', html)
    assert size, "the stored snapshot is shown with its size against the budget"
    assert "<session_knowledge" in html.replace("&lt;", "<")

    filtered = client.get(f"/sessions?session={SESSION}&category=file&category=intent").text
    assert {
        c for _, c in re.findall(r'class="event p(\d)" data-category="([a-z_]+)"', filtered)
    } == {
        "file",
        "intent",
    }
    other = client.get(f"/sessions?session={OTHER_SESSION}").text
    assert "Not stored yet; this is what would be injected now" in other
    r = client.get(f"/sessions?session={SESSION}&category=bogus")
    assert r.status_code == 400 and "unknown category" in error_of(r.text)
    r = client.get("/sessions?limit=lots")
    assert r.status_code == 400


def test_sessions_page_on_an_empty_store(tmp_path: Path) -> None:
    db = tmp_path / "empty" / ".context" / "context.db"
    with Store.open(db):
        pass
    with TestClient(create_app(db), base_url=BASE) as c:
        assert "No sessions recorded yet" in c.get("/sessions").text
        assert "none yet" in c.get("/").text
        assert "No tasks yet" in c.get("/tasks").text


def test_search_highlights_and_corrects(client: TestClient) -> None:
    r = client.get("/search?q=redis")
    assert r.status_code == 200
    snippets = re.findall(r'<p class="snippet">(.*?)</p>', r.text)
    assert snippets and all("<mark>" in s for s in snippets)
    assert "<mark>Redis</mark>" in r.text
    corrected = client.get("/search?q=argn2id").text
    assert 'id="corrected"' in corrected and "argon2id" in corrected
    assert "Nothing matches" in client.get("/search?q=qqqzzzxxx").text
    assert client.get("/search?q=").status_code == 200
    # FTS5 syntax in the query is just text
    assert client.get('/search?q=AND OR NOT "(*').status_code == 200


def test_static_assets_are_served_from_the_package(client: TestClient) -> None:
    r = client.get("/static/style.css")
    assert r.status_code == 200 and "text/css" in r.headers["content-type"]
    html = client.get("/").text
    assert "http://" not in re.sub(r'(href|action)="/[^"]*"', "", html.split("<body>")[0])
    assert not re.search(r'(src|href)="(https?:)?//', html), "no external assets"


def test_missing_or_corrupt_store_gives_a_message(client: TestClient, store: Store) -> None:
    store.close()
    for suffix in ("", "-wal", "-shm"):
        Path(str(store.path) + suffix).unlink(missing_ok=True)
    r = client.get("/")
    assert r.status_code == 400 and "ctxmode init" in error_of(r.text)
    store.path.write_bytes(b"this is not a database" * 100)
    r = client.get("/contexts")
    assert r.status_code == 400 and "not a readable ctxmode database" in error_of(r.text)


# -- cross-site protection -------------------------------------------------------------------


def test_post_without_or_with_wrong_token_is_refused(
    client: TestClient, store: Store, seeded: Seeded
) -> None:
    before = dump(store)
    url = f"/tasks/{seeded.other_task}/status"
    r = client.post(url, data={"status": "completed"}, follow_redirects=False)
    assert r.status_code == 403 and "form token" in error_of(r.text)
    r = client.post(
        url, data={"status": "completed", "csrf_token": "guess"}, follow_redirects=False
    )
    assert r.status_code == 403
    r = client.post(
        f"/contexts/{seeded.reference}/delete",
        data={"confirm": "yes", "csrf_token": ""},
        follow_redirects=False,
    )
    assert r.status_code == 403
    assert dump(store) == before


def test_token_is_per_process(store: Store, seeded: Seeded) -> None:
    with (
        TestClient(create_app(store.path), base_url=BASE) as a,
        TestClient(create_app(store.path), base_url=BASE) as b,
    ):
        assert token(a) != token(b)
        r = b.post(
            f"/tasks/{seeded.other_task}/status",
            data={"status": "blocked", "csrf_token": token(a)},
            follow_redirects=False,
        )
        assert r.status_code == 403
    assert store.get_task(seeded.other_task).status == "pending"


@pytest.mark.parametrize(
    "headers",
    [
        {"Origin": "http://evil.example"},
        {"Origin": "http://127.0.0.1:9999"},
        {"Origin": "null"},
        {"Sec-Fetch-Site": "cross-site"},
        {"Sec-Fetch-Site": "same-site"},
    ],
)
def test_foreign_origin_is_refused_even_with_the_token(
    client: TestClient, store: Store, seeded: Seeded, headers: dict[str, str]
) -> None:
    before = dump(store)
    r = post(client, f"/tasks/{seeded.other_task}/status", {"status": "completed"}, headers=headers)
    assert r.status_code == 403
    assert dump(store) == before


def test_same_origin_headers_are_accepted(client: TestClient, store: Store, seeded: Seeded) -> None:
    r = post(
        client,
        f"/tasks/{seeded.other_task}/status",
        {"status": "blocked"},
        headers={"Origin": ORIGIN, "Sec-Fetch-Site": "same-origin"},
    )
    assert r.status_code == 303
    assert store.get_task(seeded.other_task).status == "blocked"


@pytest.mark.parametrize(
    "host", ["evil.example:8765", "127.0.0.1:9999", "evil.example", "127.0.0.1"]
)
def test_foreign_host_is_refused_for_reads_and_writes(
    client: TestClient, store: Store, seeded: Seeded, host: str
) -> None:
    r = client.get("/contexts", headers={"Host": host})
    assert r.status_code == 403 and "Host" in r.text
    assert "Redis" not in r.text
    before = dump(store)
    tok = token(client)
    r = client.post(
        f"/tasks/{seeded.other_task}/status",
        data={"status": "completed", "csrf_token": tok},
        headers={"Host": host},
        follow_redirects=False,
    )
    assert r.status_code == 403
    assert dump(store) == before


def test_localhost_name_is_accepted(client: TestClient) -> None:
    assert client.get("/", headers={"Host": "localhost:8765"}).status_code == 200


def test_security_headers(client: TestClient) -> None:
    for url in ("/", "/contexts/99999", "/static/style.css"):
        headers = client.get(url).headers
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers["x-frame-options"] == "DENY"
        assert headers["x-content-type-options"] == "nosniff"
    refused = client.get("/", headers={"Host": "evil.example:8765"}).headers
    assert refused["x-frame-options"] == "DENY"


# -- the command -----------------------------------------------------------------------------


def test_ui_refuses_a_busy_port_with_a_message(project: Path) -> None:
    import socket

    from conftest import run_cli

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = run_cli("ui", "--port", str(port), cwd=project)
    assert r.returncode == 1
    assert f"port {port} on 127.0.0.1 is not available" in r.stderr
    assert "Traceback" not in r.stderr
    r = run_cli("ui", "--port", "70000", cwd=project)
    assert r.returncode == 1 and "70000" in r.stderr


def test_unexpected_failure_shows_a_generic_page_without_a_traceback(
    store: Store, seeded: Seeded
) -> None:
    import sqlite3

    # A damaged store whose schema lost a table: the core raises a raw sqlite3 error.
    conn = sqlite3.connect(store.path)
    conn.execute("DROP TABLE hook_state")
    conn.execute("DROP TABLE sessions")
    conn.close()
    app = create_app(store.path, store.root)
    with TestClient(app, base_url=BASE, raise_server_exceptions=False) as c:
        r = c.get("/sessions")
        assert r.status_code == 500
        assert "Something went wrong on the server" in error_of(r.text)
        assert "Traceback" not in r.text and "no such table" not in r.text
        assert c.get("/contexts").status_code == 200  # the rest keeps working


def test_share_and_unshare_a_context(client: TestClient, store: Store, seeded: Seeded) -> None:
    page = client.get(f"/contexts/{seeded.decision}").text
    assert "local only" in page and 'id="context-share"' in page
    r = post(client, f"/contexts/{seeded.decision}/share", {})
    assert r.status_code == 303 and r.headers["location"].endswith("?done=shared")
    shared = store.shared_file(seeded.decision)
    assert shared is not None and (store.root / shared).is_file()
    page = client.get(r.headers["location"]).text
    assert f"shared as <code>{shared}</code>" in page and 'class="flag shared"' in page
    # An edit in place that replaces the metadata keeps the item shared, and its file follows.
    post(client, f"/contexts/{seeded.decision}/edit",
         {"type": "decision", "content": "Edited in the viewer", "metadata": "{}"})  # fmt: skip
    assert "Edited in the viewer" in (store.root / shared).read_text()
    assert 'class="flag shared"' in client.get(f"/contexts/{seeded.decision}").text
    r = post(client, f"/contexts/{seeded.decision}/unshare", {})
    assert r.status_code == 303 and not (store.root / shared).exists()
    assert store.shared_file(seeded.decision) is None
    # A reference is not shared: the refusal is shown, nothing is written.
    r = post(client, f"/contexts/{seeded.reference}/share", {})
    assert r.status_code == 400 and "is a reference" in error_of(r.text)


def test_readable_timeline_snapshot_card_and_clickable_hits(
    client: TestClient, store: Store
) -> None:
    html = client.get("/sessions").text
    sentences = re.findall(r'<span class="sentence">(.*?)</span>', html)
    assert sentences and not any(s.startswith("{") for s in sentences)
    assert any(s.startswith(("edited ", "wrote ", "asked: ", "failed")) for s in sentences)
    assert 'id="snapshot-card"' in html and 'id="snapshot-raw"' in html
    (store.root / "guide.md").write_text("# Guide\n\n## Caching\n\nRedis keeps the sessions.\n")
    from ctxmode.search.indexing import index_path

    index_path(store, str(store.root / "guide.md"))
    page = client.get("/search?q=sessions").text
    link = re.search(r'<a href="(/items/doc%3A\d+)\?q=sessions">', page)
    assert link, "document hits link to their full text"
    item = client.get(link.group(1))
    assert item.status_code == 200 and "Redis keeps the sessions." in item.text


def test_a_bad_form_keeps_what_was_typed_and_says_what_to_fix(
    client: TestClient, store: Store, seeded: Seeded
) -> None:
    typed = "令牌只在服务端签发，签名密钥不得写入代码仓库。"
    r = post(client, "/contexts", {"type": "decision", "content": typed, "metadata": "{oops"})
    assert r.status_code == 400 and "metadata is not valid JSON" in error_of(r.text)
    assert typed in r.text and "{oops" in r.text
    r = post(client, f"/contexts/{seeded.snippet}/edit",
             {"type": "snippet", "content": typed, "metadata": "[1]"})  # fmt: skip
    assert r.status_code == 400 and error_of(r.text) and typed in r.text
    assert store.get_context(seeded.snippet).content != typed


def test_stale_badge_explains_itself_and_offers_its_action(
    client: TestClient, store: Store, seeded: Seeded
) -> None:
    html = client.get(f"/contexts/{seeded.stale}").text
    assert 'id="stale"' in html and f"ctxmode link {seeded.stale} --refresh" in html
    r = post(client, f"/contexts/{seeded.stale}/refresh", {})
    assert r.status_code == 303 and not store.get_context(seeded.stale).stale
    assert 'id="stale"' not in client.get(f"/contexts/{seeded.stale}").text


def test_the_sharing_id_is_not_editable_and_survives_an_edit(
    client: TestClient, store: Store, seeded: Seeded
) -> None:
    store.share([seeded.snippet])
    shared_id = store.get_context(seeded.snippet).metadata["shared_id"]
    html = client.get(f"/contexts/{seeded.snippet}").text
    assert "shared_id" not in html
    r = post(client, f"/contexts/{seeded.snippet}/edit",
             {"type": "snippet", "content": "POOL is 8", "metadata": ""})  # fmt: skip
    assert r.status_code == 303
    assert store.get_context(seeded.snippet).metadata["shared_id"] == shared_id


def test_a_form_between_1_and_2_mb_gets_the_content_limit_message(
    client: TestClient, store: Store
) -> None:
    """Starlette refuses a form part over 1 MB with a generic 400; the body cap is 2 MB."""
    before = dump(store)
    r = post(client, "/contexts", {"type": "decision", "content": "B" * 1_500_000})
    assert r.status_code == 400
    assert "over the 100000 limit" in error_of(r.text), error_of(r.text)
    assert dump(store) == before
