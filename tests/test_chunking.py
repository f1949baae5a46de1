"""Chunking: headings, fences, paragraphs, line windows, JSON key paths, code definitions."""

from __future__ import annotations

import json
from pathlib import PurePosixPath

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxmode.search.chunking import (
    CHUNK_KINDS,
    PASSAGE_CHARS,
    PASSAGE_MAX_CHARS,
    Piece,
    _suffix,
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


# -- edges of the one-pass scanners (line breaks, fences, headings, windows) --------------------


def _triples(pieces: list[Piece]) -> list[tuple[str, str, str]]:
    return [(p.title, p.content, p.kind) for p in pieces]


def test_a_heading_on_the_last_line_without_a_newline_is_its_own_section() -> None:
    assert _triples(chunk_markdown("intro\n# Last")) == [
        ("(introduction)", "intro", "markdown"),
        ("Last", "# Last", "markdown"),
    ]
    assert _triples(chunk_markdown("# A\ntext\n## B")) == [
        ("A", "# A\ntext", "markdown"),
        ("A > B", "## B", "markdown"),
    ]


def test_heading_text_follows_the_atx_rules() -> None:
    titles = [p.title for p in chunk_markdown("# C# \nx\n## Title ##  \ny\n#\tTabbed\nz\n")]
    assert titles == ["C", "C > Title", "Tabbed"]  # closing hashes and blanks dropped
    # Seven hashes, no blank after the hashes, four spaces of indent: not headings.
    body = chunk_markdown("####### x\n#nospace\n    # code\n")
    assert _triples(body) == [("(introduction)", "####### x\n#nospace\n    # code", "markdown")]
    # A heading of blanks only has an empty name: its section is still kept. Of a name that
    # is all hashes, the first stays.
    assert [p.content for p in chunk_markdown("#   \nbody\n")] == ["#   \nbody"]
    assert [p.title for p in chunk_markdown("# ###\nbody\n")] == ["#"]


def test_cjk_headings_make_the_breadcrumb() -> None:
    md = "# 安装\n先装好依赖。\n## 使用 ##\n运行命令。\n### 常见问题\n看日志。"
    assert [p.title for p in chunk_markdown(md, base_title="文档/说明.md")] == [
        "文档/说明.md > 安装",
        "文档/说明.md > 安装 > 使用",
        "文档/说明.md > 安装 > 使用 > 常见问题",
    ]


def test_lines_in_a_fence_are_never_headings_or_fence_ends() -> None:
    md = (  # ``` and ~~~ do not close a ~~~~ fence; ~~~~~ does
        "# Real\n"
        "~~~~\n# not a heading\n```\n## nor this\n~~~\nstill code\n~~~~~\n"
        "## Sub\ntext\n"
        "```\nunclosed fence\n# swallowed\n"
    )
    pieces = chunk_markdown(md)
    assert [p.title for p in pieces] == ["Real", "Real > Sub"]
    assert pieces[0].content.endswith("still code\n~~~~~")
    assert pieces[1].content.endswith("# swallowed")  # an open fence runs to the end


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "# H",
                "## Sub",
                "### 标题",
                "```",
                "~~~",
                "text",
                "  indented",
                "",
                " ",
                "x" * 90,
                "function f() {",
                "export class C {",
                "def g():",
                "Plain sentence. Another one.",
            ]
        ),  # fmt: skip
        max_size=60,
    ),
    st.sampled_from(["\r\n", "\r", "\x0c", "\u2028", "\x1e", "\x85"]),
    st.booleans(),
)
def test_every_line_break_str_splitlines_knows_chunks_like_a_newline(
    lines: list[str], brk: str, final: bool
) -> None:
    """Chunks join lines with "\\n" whatever broke them: scanning the text for "\\n" alone
    would keep a CR in titles, miss headings after CRLF or join lines a form feed split."""
    text = "\n".join(lines) + ("\n" if final else "")
    other = text.replace("\n", brk)
    for cap in (4000, 60):
        assert _triples(chunk_markdown(other, max_chars=cap)) == _triples(
            chunk_markdown(text, max_chars=cap)
        )
        assert _triples(chunk_text(other, max_chars=cap)) == _triples(
            chunk_text(text, max_chars=cap)
        )
        assert _triples(chunk_code(other, language="js", max_chars=cap)) == _triples(
            chunk_code(text, language="js", max_chars=cap)
        )


def test_a_file_without_a_final_newline_keeps_its_last_line_and_numbers() -> None:
    assert _triples(chunk_text("one\ntwo\n\nthree")) == [
        ("one (lines 1-4)", "one\ntwo\n\nthree", "text")
    ]
    log = "\n".join(f"row {i}" for i in range(1, 82))  # 81 lines: line windows, no "\n" at end
    windows = chunk_text(log)
    assert [p.title for p in windows] == [
        "lines 1-40: row 1",
        "lines 41-80: row 41",
        "lines 81-81: row 81",
    ]
    assert windows[-1].content == "row 81"
    assert [p.title for p in chunk_code("x = 1\nfunction f() {}", language="js")] == [
        "(module)",
        "function f() {}",
    ]


def test_whitespace_only_lines_separate_paragraphs() -> None:
    text = "alpha\n\u3000\t\nbeta\n \ngamma"  # an ideographic space and a tab are blank
    pieces = chunk_text(text, max_chars=11)  # too small for two paragraphs in one piece
    assert [(p.title, p.content) for p in pieces] == [
        ("alpha (lines 1-1)", "alpha"),
        ("beta (lines 3-3)", "beta"),
        ("gamma (lines 5-5)", "gamma"),
    ]


def test_a_single_huge_line_is_cut_at_the_cap_into_whole_slices() -> None:
    line = "".join(f"{i:05d}" for i in range(2000))  # 10,000 characters, no spaces
    text = line + "\nab" * 60  # short lines after it: a listing, not prose
    windows = chunk_text(text, max_chars=4000)
    assert [len(p.content) for p in windows] == [4000, 4000, 2000 + 39 * 3, 21 * 3 - 1]
    assert "".join(p.content for p in windows) == line + "\nab" * 39 + "ab" + "\nab" * 20
    assert [p.title for p in windows] == [
        f"lines 1-1: {line[:60]}",
        f"lines 1-1: {line[4000:4060]}",
        f"lines 1-40: {line[8000:8060]}",
        "lines 41-61: ab",
    ]
    code = chunk_code("x = " + line, language="js", base_title="big.js")
    assert [len(p.content) for p in code] == [4000, 4000, 2004]
    assert code[0].title == f"big.js > (module) > lines 1-1: x = {line[:56]}"
    # Hard cuts of a sentence longer than the limit: whole slices, the rest never empty.
    assert sentences("a" * 2000, 1000) == ["a" * 1000, "a" * 1000]
    assert sentences("a" * 2001, 1000) == ["a" * 1000, "a" * 1000, "a"]
    assert sentences("ab，" + "c" * 5, 4) == ["ab，", "cccc", "c"]


def test_a_window_holds_forty_lines_or_the_cap_whichever_comes_first() -> None:
    text = "\n".join(["x" * 9] * 85)  # over 80 lines: windows; 10 characters a line with "\n"
    assert [p.title for p in chunk_text(text, max_chars=4000)] == [
        "lines 1-40: xxxxxxxxx",
        "lines 41-80: xxxxxxxxx",
        "lines 81-85: xxxxxxxxx",
    ]
    # 100 characters: ten lines fill it exactly (the tenth's newline counts), the 11th waits.
    titles = [p.title.partition(":")[0] for p in chunk_text(text, max_chars=100)]
    assert titles == [f"lines {i}-{min(i + 9, 85)}" for i in range(1, 86, 10)]
    assert [p.title.partition(":")[0] for p in chunk_text(text, max_chars=99)][:2] == [
        "lines 1-9",
        "lines 10-18",
    ]


def test_code_definitions_are_found_on_the_first_and_last_lines() -> None:
    src = "export default function main() {\n}\nconst x = 1;\ninterface Shape"
    assert [p.title for p in chunk_code(src, language="ts")] == [
        "export default function main()",
        "interface Shape",
    ]
    # A definition keyword on a continuation line of another is not a line start; a
    # modifier alone on its line does not join the next line's definition.
    assert [p.title for p in chunk_code("const f = 1 +\n  class_x;\n", language="js")] == [
        "(module)"
    ]
    split = chunk_code("x\nexport\nfunction f() {}\n", language="js")
    assert _triples(split) == [
        ("(module)", "x\nexport", "code"),
        ("function f() {}", "function f() {}", "code"),
    ]


def test_python_decorators_and_crlf_keep_their_definitions() -> None:
    src = "import x\r\n\r\n@app.get('/')\r\n@cache\r\nasync def root():\r\n    return 1\r\n"
    pieces = chunk_code(src, language="py")
    assert _triples(pieces) == [
        ("(module)", "import x", "code"),
        ("def root", "@app.get('/')\n@cache\nasync def root():\n    return 1", "code"),
    ]


def test_the_suffix_of_odd_names_is_pathlibs() -> None:
    for name in ["a.", ".bashrc", "dir.d/file", "x/y.MD/", "a/b/.", "..", "a..b", "notes.tar.gz"]:
        expected = PurePosixPath(name).suffix.lower()
        language = expected.lstrip(".")
        assert chunk_document("text\n", name)[0].kind == kind_for_name(name)
        assert _suffix(name).lower() == expected, name
        assert language == _suffix(name).lower().lstrip(".")
