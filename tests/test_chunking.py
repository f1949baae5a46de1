"""Chunking: headings, fences, paragraphs, line windows, JSON key paths, code definitions."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxmode.search.chunking import (
    CHUNK_KINDS,
    PASSAGE_CHARS,
    PASSAGE_MAX_CHARS,
    chunk_code,
    chunk_content,
    chunk_document,
    chunk_json,
    chunk_markdown,
    chunk_text,
    kind_for_name,
    sentences,
    sniff_kind,
)


def test_markdown_splits_at_headings_with_breadcrumbs() -> None:
    md = "intro line\n# Guide\nwhy\n## Install\npip it\n### Linux\napt\n## Use\nrun it\n# FAQ\nq\n"
    titles = [p.title for p in chunk_markdown(md)]
    assert titles == [
        "(introduction)",
        "Guide",
        "Guide > Install",
        "Guide > Install > Linux",
        "Guide > Use",
        "FAQ",
    ]


def test_headings_without_text_are_kept_unless_a_child_says_them() -> None:
    """A heading directly over a sub-heading is in its child's breadcrumb; a heading with no
    child (an outline, a one-line README) is the only place its words are."""
    outline = "# Plan\n## Migrate the store\n## Drop the legacy cache\n"
    assert [(p.title, p.content) for p in chunk_markdown(outline)] == [
        ("Plan > Migrate the store", "## Migrate the store"),
        ("Plan > Drop the legacy cache", "## Drop the legacy cache"),
    ]
    assert [p.content for p in chunk_markdown("# Project Falcon\n")] == ["# Project Falcon"]
    assert [p.title for p in chunk_markdown("# A\ntext\n# B\n## C\n")] == ["A", "B > C"]
    assert chunk_markdown("\n\n") == []


def test_heading_inside_a_code_fence_is_not_a_heading() -> None:
    md = "# Real\ntext\n```bash\n# a shell comment\necho hi\n```\nafter\n"
    pieces = chunk_markdown(md)
    assert [p.title for p in pieces] == ["Real"]
    assert "# a shell comment" in pieces[0].content


def test_oversize_section_never_splits_a_fence() -> None:
    fence = "```python\n" + "\n".join(f"x_{i} = {i}" for i in range(300)) + "\n```"
    md = "# Big\n" + ("filler paragraph text. " * 40 + "\n\n") * 4 + fence + "\n\nend para\n"
    pieces = chunk_markdown(md, max_chars=2000)
    assert len(pieces) > 1
    for p in pieces:
        assert p.content.count("```") % 2 == 0, p.content[:200]
    holder = [p for p in pieces if "x_0 = 0" in p.content]
    assert len(holder) == 1 and "x_299 = 299" in holder[0].content
    assert all(p.title.startswith("Big (part ") for p in pieces)


def test_a_huge_fence_is_cut_into_fenced_parts() -> None:
    fence = "```\n" + "\n".join(f"line {i} " + "y" * 50 for i in range(2000)) + "\n```"
    pieces = chunk_markdown("# Log\n" + fence, max_chars=1000)
    assert len(pieces) > 10
    for p in pieces:
        assert len(p.content) <= 1000 * 4
        assert p.content.count("```") % 2 == 0


def test_plain_text_paragraphs_and_line_windows() -> None:
    text = "first para\nstill first\n\nsecond para\n"
    pieces = chunk_text(text)
    assert len(pieces) == 1 and "second para" in pieces[0].content
    log = "\n".join(f"event {i}" for i in range(200))
    windows = chunk_text(log)
    assert len(windows) == 5
    assert windows[0].title.startswith("lines 1-40")
    assert "event 199" in windows[-1].content


@settings(max_examples=60, deadline=None)
@given(st.text(min_size=0, max_size=3000), st.integers(min_value=50, max_value=800))
def test_chunks_respect_the_cap_and_lose_no_words(text: str, cap: int) -> None:
    pieces = chunk_text(text, max_chars=cap)
    for p in pieces:
        assert len(p.content) <= cap
        assert p.content.strip()
    joined = "".join("".join(p.content.split()) for p in pieces)
    assert joined == "".join(text.split()) or not text.strip()


def test_json_by_key_path() -> None:
    data = {
        "server": {"host": "db.local", "port": 5432},
        "users": [{"name": f"user{i}", "bio": "x" * 200} for i in range(30)],
    }
    pieces = chunk_json(json.dumps(data))
    titles = [p.title for p in pieces]
    assert any(t.startswith("server") for t in titles)
    assert any(t.startswith("users[") for t in titles)
    users = [p for p in pieces if p.title.startswith("users[")]
    assert "users[0]" in users[0].content
    assert all(p.kind == "json" for p in pieces)


def test_invalid_json_falls_back_to_text() -> None:
    pieces = chunk_json("{not json at all")
    assert pieces and pieces[0].kind == "text"


def test_python_by_top_level_definitions() -> None:
    src = (
        "import os\n\nX = 1\n\n@decorator\ndef alpha():\n    return 1\n\n"
        "class Beta:\n    def m(self):\n        pass\n"
    )
    pieces = chunk_code(src, language="py")
    assert [p.title for p in pieces] == ["(module)", "def alpha", "class Beta"]
    assert pieces[1].content.startswith("@decorator")


def test_other_languages_by_column_zero_regex() -> None:
    src = "const a = 1;\nfunction foo() {\n  return 1;\n}\nexport class Bar {\n}\nfn baz() {}\n"
    titles = [p.title for p in chunk_code(src, language="js")]
    assert titles[0] == "(module)"
    assert titles[1].startswith("function foo")
    assert titles[2].startswith("export class Bar")
    assert titles[3].startswith("fn baz")


def test_dispatch_by_name_and_sniffing() -> None:
    assert kind_for_name("docs/a.md") == "markdown"
    assert kind_for_name("x.json") == "json"
    assert kind_for_name("src/m.py") == "code"
    assert kind_for_name("notes.txt") == "text"
    assert sniff_kind('{"a": 1}') == "json"
    assert sniff_kind("# Title\nbody") == "markdown"
    assert sniff_kind("just words") == "text"
    assert chunk_document("def f():\n    pass\n", "m.py")[0].title == "def f"
    assert chunk_content('{"k": 1}')[0].kind == "json"
    samples = {"a.md": "# T\nx\n", "b.json": '{"k": 1}', "c.py": "x = 1\n", "d.txt": "words\n"}
    kinds = {p.kind for name, text in samples.items() for p in chunk_document(text, name)}
    assert kinds == set(CHUNK_KINDS)  # search's type check knows every kind chunking makes


def test_base_title_prefixes_every_title() -> None:
    pieces = chunk_markdown("# A\nx\n", base_title="docs/a.md")
    assert pieces[0].title == "docs/a.md > A"


# -- prose without structure ---------------------------------------------------------------------

#: Chinese sentences of varied length, none with a line break.
_ZH = [
    "本项目把每个项目的上下文保存在一个本地数据库里。",
    "钩子在每次工具调用时运行，必须很快，并且失败时不影响代理。",
    "“搜索结果要短。”",
    "快照不超过两千字节；",
    "服务器进程在客户端退出后可能变成孤儿进程！",
    "为什么要用心跳？",
]


def test_prose_without_breaks_is_cut_into_passages_at_sentence_ends() -> None:
    text = "".join(_ZH[i % len(_ZH)] for i in range(900))  # ~20k characters, one line
    pieces = chunk_text(text)
    assert len(pieces) > 20
    assert "".join(p.content for p in pieces) == text
    for p in pieces:
        assert len(p.content) <= PASSAGE_MAX_CHARS
        assert p.content.endswith(("。", "！", "？", "；", "”")), p.content[-5:]
        assert ", sentences " in p.title and "(line 1," in p.title
    assert max(len(p.content) for p in pieces) > PASSAGE_CHARS // 2


def test_an_over_long_sentence_is_cut_after_a_comma_then_hard() -> None:
    clause = "这一句话非常长" * 20 + "，"  # 141 characters
    text = clause * 12 + "结束。" + "无标点" * 700
    pieces = chunk_text(text)
    assert "".join(p.content for p in pieces) == text
    assert all(len(p.content) <= PASSAGE_MAX_CHARS for p in pieces)
    assert pieces[0].content.endswith("，")
    assert len(sentences("无标点" * 700)) == 3  # 2,100 characters without a break: cut hard


def test_english_prose_is_cut_after_a_full_stop_and_a_space() -> None:
    sentence = "The hook records every edit and the server answers searches quickly. "
    pieces = chunk_text(sentence * 60 + "Done? Yes!")
    assert len(pieces) > 5
    assert all(p.content.endswith((".", "!")) for p in pieces)


def test_logs_and_short_paragraphs_keep_their_chunking() -> None:
    log = "\n".join(f"2024-05-01 12:00:{i % 60:02d} INFO request {i} done." for i in range(200))
    pieces = chunk_text(log)
    assert all(", sentences " not in p.title and "lines" in p.title for p in pieces)
    short = chunk_text("A short paragraph. With two sentences.\n\nAnother one.")
    assert len(short) == 1 and ", sentences " not in short[0].title
    md = chunk_markdown("# Title\n\n" + "Long markdown prose sentence here. " * 200)
    assert all(", sentences " not in p.title for p in md)
