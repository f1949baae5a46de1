"""Chinese, Japanese, Korean and mixed text: the bigram index, its triggers and its migration."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from _hooks import fixture, run_hook
from ctxmode import Store
from ctxmode.core import cjk
from ctxmode.core.schema import MIGRATIONS, SCHEMA_VERSION
from ctxmode.search import query as sq
from ctxmode.search.engine import search


def top_ids(store: Store, query: str, n: int = 3) -> list[str]:
    return [h.id for h in search(store, query, limit=10).hits[:n]]


def cjk_rows(store: Store) -> int:
    return int(store.conn.execute("SELECT count(*) FROM search_cjk").fetchone()[0])


# -- the analyser --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("孤儿进程", ["孤儿", "儿进", "进程"]),
        ("MCP 进程的 Mode", ["mcp", "进程", "程的", "mode"]),
        ("的 x 了", ["x"]),  # lone CJK characters carry no bigram
        ("ハロー・ワールド", ["ハロ", "ロー", "ワー", "ール", "ルド"]),  # the middle dot splits
        ("안녕하세요 세계", ["안녕", "녕하", "하세", "세요", "세계"]),
        ("query_context 12.5", ["query", "context", "12", "5"]),
    ],
)
def test_bigrams_of_each_script(text: str, expected: list[str]) -> None:
    assert cjk.tokens(text) == expected
    assert cjk.bigrams(text) == " ".join(expected)


def test_query_terms_are_distinct_bigrams_and_lone_characters() -> None:
    parsed = sq.parse("进程进程 的 mode")
    assert [(t.text, t.cjk) for t in parsed.terms] == [
        ("进程", True),
        ("程进", True),
        ("的", True),
        ("mode", False),
    ]
    assert sq.bigram_terms(parsed) == ("进程", "程进")
    assert sq.short_cjk_terms(parsed) == ("的",)
    assert sq.trigram_expression(parsed) == '"mode"'


# -- ranking -------------------------------------------------------------------------------------


def test_words_inside_a_cjk_run_match_with_other_words_between(store: Store) -> None:
    target = store.write_context(
        "constraint", "服务器关闭\n客户端退出时，MCP 进程可能变成孤儿进程，需要心跳检测。"
    ).id
    for i, text in enumerate(
        [
            "进程管理\n每个进程都有自己的编号，父进程等待子进程。",
            "孤儿院的故事\n这是一个关于孤儿的故事，和计算机无关。",
            "MCP 协议\nMCP 是模型上下文协议，定义了工具和资源。",
            "心跳\n心跳间隔为三十秒。",
        ]
    ):
        store.write_context("reference", f"{text}（{i}）")
    assert top_ids(store, "MCP 进程变成孤儿进程", 1) == [f"ctx:{target}"]


def test_a_particle_does_not_rank_by_its_count(store: Store) -> None:
    target = store.write_context(
        "reference", "query_context 接口\nquery_context 的 mode 参数决定返回全文还是摘要。"
    ).id
    for i in range(4):
        store.write_context(
            "reference",
            f"笔记{i}\n我的的的朋友的书的封面的颜色的变化的原因的的的，是的的的。" * 3,
        )
    assert top_ids(store, "query_context 的 mode 参数", 1) == [f"ctx:{target}"]
    # A run of two words finds them apart, particles between: "模式参数" in "模式的参数".
    apart = store.write_context("reference", "配置\n每种模式的参数不同。").id
    assert top_ids(store, "模式参数", 1) == [f"ctx:{apart}"]


def test_japanese_korean_and_mixed_documents(store: Store) -> None:
    ja = store.write_context(
        "reference", "設定ファイル\n設定ファイルはプロジェクトの直下に置く。"
    ).id
    ko = store.write_context(
        "reference", "데이터베이스\n데이터베이스 파일은 프로젝트 폴더에 있다."
    ).id
    mixed = store.write_context("decision", "缓存策略\n我们用 SQLite 的 WAL 模式保存缓存。").id
    store.write_context("reference", "English\nThe config file lives in the project root.")
    assert top_ids(store, "プロジェクトの設定", 1) == [f"ctx:{ja}"]
    assert top_ids(store, "데이터베이스 폴더", 1) == [f"ctx:{ko}"]
    assert top_ids(store, "WAL 模式", 1) == [f"ctx:{mixed}"]
    assert top_ids(store, "sqlite 缓存", 1) == [f"ctx:{mixed}"]


def test_a_snippet_highlights_the_bigrams_of_the_query(store: Store) -> None:
    store.write_context(
        "reference", "进程\n" + "无关的内容。" * 40 + "父进程退出后子进程变成孤儿进程。"
    )
    hit = search(store, "孤儿进程").hits[0]
    assert "**孤儿进程**" in hit.snippet


# -- the index follows writes --------------------------------------------------------------------


def test_rows_follow_inserts_edits_and_deletes(store: Store) -> None:
    plain = store.write_context("reference", "plain English text only")
    assert cjk_rows(store) == 0  # no CJK character: no bigram row
    first = store.write_context("reference", "旧标题\n这里写着原来的内容。")
    assert cjk_rows(store) == 1
    assert top_ids(store, "原来的内容", 1) == [f"ctx:{first.id}"]
    store.update_context(first.id, content="新标题\n现在换成了完全不同的文字。")
    assert search(store, "原来的内容").hits == ()
    assert top_ids(store, "不同的文字", 1) == [f"ctx:{first.id}"]
    store.update_context(plain.id, content="现在也有中文了")
    assert cjk_rows(store) == 2
    assert top_ids(store, "中文", 1) == [f"ctx:{plain.id}"]
    store.delete_context(first.id)
    store.delete_context(plain.id)
    assert cjk_rows(store) == 0
    assert search(store, "不同的文字").hits == ()
    store.conn.execute("INSERT INTO search_cjk(search_cjk, rank) VALUES ('integrity-check', 1)")


def test_hook_recorded_cjk_events_are_searchable(project: Path) -> None:
    payload = fixture("claude-code", "user-prompt-submit.zh", project)
    done = run_hook("UserPromptSubmit", payload, cwd=project, agent="claude-code")
    assert done.returncode == 0, done.stderr
    with Store.open(project / ".context" / "context.db") as store:
        hits = search(store, "保留接口").hits  # "旧" stands between them in the prompt
        assert hits and all(hit.kind == "event" for hit in hits)
        texts = [item.text for item in store.get_items([hit.id for hit in hits])]
        assert any("全局变量" in text for text in texts)  # the request, found by its words


# -- migration of an existing store --------------------------------------------------------------


def _as_before_m008(path: Path) -> None:
    """Put a store back in the state a store of schema 7 is in: no bigram table or triggers."""
    conn = sqlite3.connect(path)
    with conn:
        for trigger in ("search_cjk_ai", "search_cjk_ad", "search_cjk_au"):
            conn.execute(f"DROP TRIGGER {trigger}")
        conn.execute("DROP TABLE search_cjk")
        conn.execute("DELETE FROM _migrations WHERE name = 'm008_search_cjk'")
        conn.execute("PRAGMA user_version = 7")
    conn.close()


def test_an_existing_store_is_migrated_and_its_cjk_items_found(tmp_path: Path) -> None:
    assert MIGRATIONS[7].__name__ == "m008_search_cjk"
    path = tmp_path / "old.db"
    with Store.open(path) as store:
        store.write_context("decision", "方案\n我们决定采用方案B，不要用全局变量。")
        store.write_context("decision", "plan\nuse plan B")
    _as_before_m008(path)  # the items are there, the bigram index is not
    with Store.open(path) as store:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert cjk_rows(store) == 1
        hits = search(store, "全局变量").hits
        assert len(hits) == 1 and "方案B" in store.get_items([hits[0].id])[0].text


# -- repeated text and snippets ------------------------------------------------------------------


def test_identical_chunks_collapse_into_one_hit_that_names_the_others(store: Store) -> None:
    section = "心跳检测\n服务器每三十秒发送一次心跳，客户端超时后重新连接。"
    store.write_context("reference", "无关\n今天天气很好。")
    first = store.write_context("reference", section).id
    again = store.write_context("reference", section.replace("\n", "\n\n  "))  # spacing differs
    other = store.write_context("reference", "心跳间隔\n心跳间隔可以在配置里修改。").id
    result = search(store, "心跳 超时")
    ids = [h.id for h in result.hits]
    assert ids.count(f"ctx:{first}") + ids.count(f"ctx:{again.id}") == 1
    assert f"ctx:{other}" in ids
    top = result.hits[0]
    assert top.id in (f"ctx:{first}", f"ctx:{again.id}")
    twin = f"ctx:{again.id}" if top.id == f"ctx:{first}" else f"ctx:{first}"
    assert len(top.also) == 1 and top.also[0].startswith(twin + " (")
    assert top.to_dict()["also"] == list(top.also)
    assert f"(also in {twin} (" in top.flags  # what the CLI and MCP listings print


def test_the_cli_listing_says_where_else_a_hit_occurs(tmp_path: Path) -> None:
    import subprocess
    import sys

    ctxmode = str(Path(sys.executable).parent / "ctxmode")
    db = str(tmp_path / "c.db")
    section = "心跳检测 服务器每三十秒发送一次心跳，客户端超时后重新连接。"
    subprocess.run([ctxmode, "--db", db, "init"], check=True)
    for text in (section, section.replace(" ", "   ")):  # the same text, spaced apart
        subprocess.run([ctxmode, "--db", db, "add", "reference", text], check=True)
    out = subprocess.run(
        [ctxmode, "--db", db, "search", "心跳 超时"], capture_output=True, text=True, check=True
    ).stdout
    assert out.count("ctx:1") + out.count("ctx:2") == 2, out  # one hit, naming its twin
    assert "(also in ctx:" in out


def test_the_snippet_is_the_window_covering_most_query_terms() -> None:
    from ctxmode.search.rank import snippet_for

    text = (
        "进程的说明。"
        + "无关的内容。" * 30
        + "父进程退出后子进程变成孤儿进程，需要心跳检测。"
        + "进程" * 5
        + "无关" * 60
    )
    snippet = snippet_for(sq.parse("孤儿进程 心跳"), text)
    assert "**孤儿进程**" in snippet and "**心跳**" in snippet
    words = "alpha x " * 50 + "alpha beta gamma end " + "y " * 100
    snippet = snippet_for(sq.parse("alpha beta gamma"), words)
    assert "**alpha** **beta** **gamma**" in snippet


def test_files_chunked_before_passages_are_chunked_again_on_refresh(tmp_path: Path) -> None:
    from ctxmode.search.indexing import index_path, refresh_sources

    project = tmp_path / "p"
    project.mkdir()
    text = "本项目把上下文保存在本地数据库里，钩子必须很快。" * 200  # 4,800 characters, one line
    (project / "design.txt").write_text(text, encoding="utf-8")
    path = project / ".context" / "context.db"
    with Store.open(path) as store:
        index_path(store, "design.txt")
        assert store.conn.execute("SELECT count(*) FROM chunks").fetchone()[0] > 5
        with store.transaction() as conn:  # what the chunking of schema 8 left: one big chunk
            conn.execute("DELETE FROM chunks WHERE ordinal > 0")
            conn.execute("UPDATE chunks SET content = ?", (text,))
            conn.execute("DELETE FROM _migrations WHERE name = 'm009_rechunk_prose'")
        store.conn.execute("PRAGMA user_version = 8")
    with Store.open(path) as store:
        assert store.conn.execute("SELECT count(*) FROM chunks").fetchone()[0] == 1
        report = refresh_sources(store)
        assert report.sources[0].status == "refreshed"
        sizes = [
            r[0]
            for r in store.conn.execute(
                "SELECT length(body) FROM search_items WHERE item_kind = 'chunk'"
            )
        ]
        assert len(sizes) > 5 and max(sizes) <= 1000
        assert refresh_sources(store).sources[0].status == "unchanged"
