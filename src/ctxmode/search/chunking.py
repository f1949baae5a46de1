"""Split documents into searchable chunks: pure functions, no I/O.

Invariants:
- every chunk holds at most ``max_chars`` characters, with one exception: a fenced code block
  is never split across chunks unless it alone exceeds ``HARD_CAP_FACTOR * max_chars``; then
  each part is re-fenced so that every chunk still holds complete fences;
- markdown chunks are titled with their heading breadcrumb (``A > B > C``);
- no chunk is empty or whitespace only; chunk order follows the document.

Dispatch is by file name (``chunk_document``) or by sniffing content (``chunk_content``).
"""

from __future__ import annotations

import ast
import json
import re
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate
from pathlib import PurePosixPath
from typing import Any

#: Largest chunk, in characters (a chunk of this size is ~1k tokens).
MAX_CHUNK_CHARS = 4000
#: Plain text and JSON pieces are grouped up to about this size: small enough to point at the
#: right place, large enough to keep a paragraph with its neighbours.
TARGET_CHUNK_CHARS = 1500
#: The kinds of chunk (``Piece.kind``) that chunking produces.
CHUNK_KINDS = ("code", "json", "markdown", "text")
#: Lines per window when plain text has no paragraph breaks (logs, command output).
WINDOW_LINES = 40
#: A single code fence may grow to this multiple of ``max_chars`` before it is split.
HARD_CAP_FACTOR = 4
#: Longest chunk title, in characters.
MAX_TITLE_CHARS = 160
#: Prose without structure (a paragraph of long lines over ``TARGET_CHUNK_CHARS``: a pasted
#: document without headings or line breaks) is cut at sentence ends into passages of about
#: ``PASSAGE_CHARS`` (~1.8 KB of Chinese), never more than ``PASSAGE_MAX_CHARS`` (a sentence
#: longer than that is cut after a comma, else hard).
PASSAGE_CHARS = 600
PASSAGE_MAX_CHARS = 1000
#: Average line length from which a long paragraph reads as prose, not as log lines.
PROSE_LINE_CHARS = 200

MARKDOWN_EXTS = frozenset({".md", ".markdown", ".mdx", ".mkd"})
JSON_EXTS = frozenset({".json", ".ipynb"})
CODE_EXTS = frozenset(
    {
        ".py", ".pyi", ".js", ".mjs", ".cjs", ".jsx", ".ts", ".tsx", ".go", ".rs", ".rb",
        ".java", ".kt", ".kts", ".scala", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".cs",
        ".php", ".swift", ".lua", ".pl", ".pm", ".sh", ".bash", ".zsh", ".r", ".ex", ".exs",
        ".erl", ".hs", ".ml", ".clj", ".dart", ".sql", ".vue", ".svelte",
    }
)  # fmt: skip


@dataclass(frozen=True)
class Piece:
    """One chunk before it is stored: a title, its text and what kind of text it is."""

    title: str
    content: str
    kind: str  # "markdown" | "text" | "json" | "code"


def _title(text: str) -> str:
    clean = " ".join(text.split())
    return clean if len(clean) <= MAX_TITLE_CHARS else clean[: MAX_TITLE_CHARS - 1] + "…"


def _join_title(base: str, rest: str) -> str:
    if base and rest:
        return _title(f"{base} > {rest}")
    return _title(base or rest)


# -- plain text ------------------------------------------------------------------------------


#: Line breaks that ``str.splitlines`` honours besides "\n" (the last three only in non-ASCII
#: text). Chunks join lines with "\n", so a text free of them is already in joined form.
_OTHER_BREAKS = ("\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e")
_OTHER_BREAKS_NON_ASCII = ("\x85", "\u2028", "\u2029")
#: Any character that ``str.strip()`` keeps (re's ``\s`` and ``str.isspace`` agree).
_NON_SPACE = re.compile(r"\S")


def _joined_lines(text: str) -> str:
    """``"\n".join(text.splitlines())``, without splitting a text whose only break is "\n".

    The chunkers below scan this form with one regex pass instead of a loop over lines: in it,
    "\n" separates exactly the lines ``str.splitlines`` would give (an empty text and a lone
    "\n" both give "", so callers that count lines treat an empty ``text`` apart).
    """
    if any(b in text for b in _OTHER_BREAKS) or (
        not text.isascii() and any(b in text for b in _OTHER_BREAKS_NON_ASCII)
    ):
        return "\n".join(text.splitlines())
    return text[:-1] if text.endswith("\n") else text


def _line_windows(
    lines: list[str], first_line: int, max_chars: int, base: str, kind: str
) -> list[Piece]:
    """Consecutive lines grouped up to ``WINDOW_LINES`` lines and ``max_chars`` characters."""
    units: list[str] = lines
    numbers: list[int] | range = range(first_line, first_line + len(lines))
    if any(len(raw) > max_chars for raw in lines):
        # A single line longer than the cap is cut into cap-sized slices (same line number).
        units, numbers = [], []
        for offset, raw in enumerate(lines):
            cut = [raw[i : i + max_chars] for i in range(0, len(raw), max_chars)] or [""]
            units.extend(cut)
            numbers.extend([first_line + offset] * len(cut))
    # A window takes lines while it holds fewer than WINDOW_LINES and the next line still fits
    # (its size counts one newline a line): with prefix sums, its end is one bisection away.
    prefix = [0, *accumulate([len(u) + 1 for u in units])]
    pieces: list[Piece] = []
    count, i = len(units), 0
    while i < count:
        hi = min(count, i + WINDOW_LINES) + 1
        end = max(bisect_right(prefix, prefix[i] + max_chars, i + 1, hi) - 1, i + 1)
        window = units[i:end]
        text = "\n".join(window).strip("\n")
        if _NON_SPACE.search(text):
            head = next((ln.strip() for ln in window if ln.strip()), "")[:60]
            label = f"lines {numbers[i]}-{numbers[end - 1]}" + (f": {head}" if head else "")
            pieces.append(Piece(_join_title(base, label), text, kind))
        i = end
    return pieces


#: Where a sentence ends: after 。！？； (and the closing quotes or brackets that follow), after
#: . ! ? followed by a space, and at a line break; the spaces after it stay with it.
#: (Written as one character class, then a look back at which one, so that the regex engine scans
#: for that class: three times faster than the plain alternation it is equivalent to.)
_SENTENCE_END = re.compile(
    r"[。！？；.!?\n]"
    r"(?:(?<=[。！？；])[”’」』）》】)\]\"']*|(?<=[.!?])[”’)\]\"']*(?=\s)|(?<=\n))\s*"
)
#: Where an over-long sentence may be cut: after a comma.
_CLAUSE_END = re.compile(r"[，、,；;：:]\s*")


def _cut(text: str, ends: re.Pattern[str]) -> list[str]:
    """``text`` cut after each match of ``ends`` (the pieces join back to ``text``)."""
    out: list[str] = []
    at = 0
    for m in ends.finditer(text):
        if m.end() > at:
            out.append(text[at : m.end()])
            at = m.end()
    if at < len(text):
        out.append(text[at:])
    return out


def sentences(text: str, limit: int = PASSAGE_MAX_CHARS) -> list[str]:
    """``text`` cut into sentences (``_SENTENCE_END``), none over ``limit`` characters: a longer
    one is cut after its commas, then hard. The pieces join back to ``text``."""
    out: list[str] = []
    for sentence in _cut(text, _SENTENCE_END):
        if len(sentence) <= limit:
            out.append(sentence)
            continue
        part = ""
        for clause in _cut(sentence, _CLAUSE_END):
            if len(clause) > limit:  # cut hard into ``limit``-sized slices; the rest goes on
                if part:
                    out.append(part)
                    part = ""
                rest = (len(clause) - 1) // limit * limit  # leaves 1..limit characters
                out.extend(clause[i : i + limit] for i in range(0, rest, limit))
                clause = clause[rest:]
            if part and len(part) + len(clause) > limit:
                out.append(part)
                part = ""
            part += clause
        if part:
            out.append(part)
    return out


def _head(text: str, size: int = 60) -> str:
    """The first ``size`` characters of ``" ".join(text.split())``, from a prefix of ``text``
    when that prefix already gives them (it gives a prefix of the whole)."""
    head = " ".join(text[: size * 4].split())
    if len(head) < size and len(text) > size * 4:
        head = " ".join(text.split())
    return head[:size]


def _passages(text: str, first_line: int, base: str, kind: str, max_chars: int) -> list[Piece]:
    """Prose without structure: sentences grouped into passages of about ``PASSAGE_CHARS``."""
    target = min(PASSAGE_CHARS, max_chars)
    pieces: list[Piece] = []
    group: list[str] = []
    size = 0
    done = 0  # sentences before the group
    line = first_line

    def flush() -> None:
        nonlocal group, size, done, line
        body = "".join(group)
        if body.strip():
            last = line + body.rstrip().count("\n")
            lines = f"line {line}" if last == line else f"lines {line}-{last}"
            span = f"sentences {done + 1}-{done + len(group)}"
            head = _head(body)
            pieces.append(Piece(_join_title(base, f"{head} ({lines}, {span})"), body.strip(), kind))
        line += body.count("\n")
        done += len(group)
        group, size = [], 0

    for sentence in sentences(text, min(PASSAGE_MAX_CHARS, max_chars)):
        if group and size + len(sentence) > target:
            flush()
        group.append(sentence)
        size += len(sentence)
    flush()
    return pieces


#: A paragraph of ``_joined_lines`` text: lines that each hold a non-space character.
_PARAGRAPH = re.compile(r"^[^\S\n]*\S.*(?:\n[^\S\n]*\S.*)*", re.MULTILINE)


def chunk_text(
    text: str, *, base_title: str = "", max_chars: int = MAX_CHUNK_CHARS, kind: str = "text"
) -> list[Piece]:
    """Plain text: paragraphs grouped up to the target size; a long paragraph of prose cut into
    passages at sentence ends (``_passages``); line windows for other long paragraphs."""
    joined = _joined_lines(text)
    target = min(TARGET_CHUNK_CHARS, max_chars)
    pieces: list[Piece] = []
    # Paragraphs (blank lines separate them) as (first line number, line count, text); a
    # group of them is flushed as one piece.
    group: list[tuple[int, int, str]] = []
    group_size = 0

    def flush_group() -> None:
        nonlocal group, group_size
        if group:
            first, last = group[0][0], group[-1][0] + group[-1][1] - 1
            body = "\n\n".join(p for _, _, p in group)
            head = group[0][2].partition("\n")[0].strip()[:60]
            pieces.append(
                Piece(_join_title(base_title, f"{head} (lines {first}-{last})"), body, kind)
            )
        group, group_size = [], 0

    number, at = 1, 0
    for match in _PARAGRAPH.finditer(joined):
        number += joined.count("\n", at, match.start())
        at = match.start()
        para = match.group()
        count = para.count("\n") + 1
        size = len(para) + 1  # its lines, one newline each
        # Prose: long lines on average (sentences, not a log or a listing).
        if size > target and size - count >= PROSE_LINE_CHARS * count:
            flush_group()
            pieces.extend(_passages(para, number, base_title, kind, max_chars))
        elif size > max_chars or count > WINDOW_LINES * 2:
            flush_group()
            pieces.extend(_line_windows(para.split("\n"), number, max_chars, base_title, kind))
        else:
            if group and group_size + size > target:
                flush_group()
            group.append((number, count, para))
            group_size += size + 1
    flush_group()
    return pieces


# -- markdown --------------------------------------------------------------------------------

#: An ATX heading: its level (the hashes) and its text with any closing hashes (``_heading_name``).
_HEADING = re.compile(r" {0,3}(#{1,6})[ \t]+(.+)")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


def _heading_name(rest: str) -> str:
    """A heading's name from what follows its hashes and blanks: the closing run of blanks,
    hashes and blanks dropped, as the CommonMark pattern ``(.+?)[ \\t]*#*[ \\t]*$`` would
    (its first character always stays), then stripped."""
    return (rest[0] + rest[1:].rstrip(" \t").rstrip("#").rstrip(" \t")).strip()


def _blocks(lines: list[str]) -> list[tuple[str, list[str]]]:
    """Split section lines into ("fence" | "para", lines) blocks; fences stay whole."""
    blocks: list[tuple[str, list[str]]] = []
    para: list[str] = []
    fence: list[str] | None = None
    marker = ""
    for line in lines:
        if fence is not None:
            fence.append(line)
            m = _FENCE.match(line)
            if (
                m
                and m.group(1)[0] == marker[0]
                and len(m.group(1)) >= len(marker)
                and not line.strip()[len(m.group(1)) :].strip()
            ):
                blocks.append(("fence", fence))
                fence = None
            continue
        m = _FENCE.match(line)
        if m:
            if para:
                blocks.append(("para", para))
                para = []
            fence, marker = [line], m.group(1)
        elif not line.strip():
            if para:
                blocks.append(("para", para))
                para = []
        else:
            para.append(line)
    if fence is not None:  # unterminated fence: runs to the end of the section
        blocks.append(("fence", fence))
    if para:
        blocks.append(("para", para))
    return blocks


def _split_fence(lines: list[str], max_chars: int) -> list[str]:
    """Cut an oversize fence into parts that each open and close the fence again."""
    opener = lines[0]
    m = _FENCE.match(opener)
    closer = m.group(1) if m else "```"
    body = lines[1:]
    if body and _FENCE.match(body[-1]):
        body = body[:-1]
    parts: list[str] = []
    buf: list[str] = []
    size = len(opener) + len(closer) + 2
    for line in body:
        line = line[: max_chars - len(opener) - len(closer) - 4]
        if buf and size + len(line) + 1 > max_chars:
            parts.append("\n".join([opener, *buf, closer]))
            buf, size = [], len(opener) + len(closer) + 2
        buf.append(line)
        size += len(line) + 1
    if buf:
        parts.append("\n".join([opener, *buf, closer]))
    return parts


def _pack_section(title: str, section: str, max_chars: int) -> list[Piece]:
    """One section (its lines joined with "\n") as pieces of at most ``max_chars``."""
    text = section.strip("\n")
    if len(text) <= max_chars:
        return [Piece(title, text, "markdown")]
    pieces: list[str] = []
    buf: list[str] = []  # units of the piece being filled, joined by blank lines
    size = 0  # its length once joined
    for kind, block in _blocks(section.split("\n")):
        block_text = "\n".join(block)
        units: list[str]
        if kind == "fence" and len(block_text) > max_chars * HARD_CAP_FACTOR:
            units = _split_fence(block, max_chars)
        elif kind == "fence":
            units = [block_text]  # never split a fence that fits the hard cap
        elif len(block_text) > max_chars:
            units = [p.content for p in _line_windows(block, 1, max_chars, "", "markdown")]
        else:
            units = [block_text]
        for unit in units:  # never empty
            if buf and size + len(unit) + 2 > max_chars:
                pieces.append("\n\n".join(buf))
                buf, size = [], 0
            size += len(unit) + 2 if buf else len(unit)
            buf.append(unit)
    if buf:
        pieces.append("\n\n".join(buf))
    if len(pieces) == 1:
        return [Piece(title, pieces[0], "markdown")]
    out = []
    for i, part in enumerate(pieces, start=1):
        head = next((ln.strip() for ln in part.splitlines() if ln.strip()), "")[:60]
        label = f"{title} (part {i}/{len(pieces)})" + (f": {head}" if i > 1 and head else "")
        out.append(Piece(_title(label), part, "markdown"))
    return out


#: A line that may open or close a fence or be a heading: only these need a closer look (the
#: first line by ``_MARKUP_START``; a pattern led by "\n" is found far faster than ``^``).
_MARKUP_LINE = re.compile(r"\n {0,3}(?:#|```|~~~)")
_MARKUP_START = re.compile(r" {0,3}(?:#|```|~~~)")


def chunk_markdown(
    text: str, *, base_title: str = "", max_chars: int = MAX_CHUNK_CHARS
) -> list[Piece]:
    """Markdown split at ATX headings (never inside a code fence), titled by breadcrumb."""
    joined = _joined_lines(text)
    # Sections as (breadcrumb, start, end, body_from, level): ``joined[start:end]`` is its lines
    # (the heading first), ``joined[body_from:end]`` the lines under its heading. The
    # introduction has no breadcrumb.
    sections: list[tuple[tuple[str, ...] | None, int, int, int, int]] = []
    levels: list[int] = []
    names: list[str] = []
    crumbs: tuple[str, ...] | None = None
    level = start = body_from = 0
    fence_marker = ""
    marks = [m.start() + 1 for m in _MARKUP_LINE.finditer(joined)]
    if _MARKUP_START.match(joined):
        marks.insert(0, 0)
    for at in marks:
        line_end = joined.find("\n", at)
        line = joined[at:] if line_end < 0 else joined[at:line_end]
        m_fence = _FENCE.match(line)
        if fence_marker:
            if (
                m_fence
                and m_fence.group(1)[0] == fence_marker[0]
                and len(m_fence.group(1)) >= len(fence_marker)
            ):
                fence_marker = ""
            continue
        if m_fence:
            fence_marker = m_fence.group(1)
            continue
        m = _HEADING.fullmatch(line)
        if m:
            sections.append((crumbs, start, max(at - 1, 0), body_from, level))
            level = len(m.group(1))
            while levels and levels[-1] >= level:
                levels.pop()
                names.pop()
            levels.append(level)
            names.append(_heading_name(m.group(2)))
            crumbs = tuple(names)
            start, body_from = at, len(joined) + 1 if line_end < 0 else line_end + 1
    sections.append((crumbs, start, len(joined), body_from, level))
    pieces: list[Piece] = []
    last = len(sections) - 1
    for i, (crumb, first, end, body_at, depth) in enumerate(sections):
        # A heading directly followed by a sub-heading adds nothing its children's breadcrumb
        # does not already say; one followed by a sibling, or ending the file, is kept (an
        # outline of headings alone stays findable). A section without a heading (the
        # introduction) is kept only when it holds text.
        if not _NON_SPACE.search(joined, body_at, end) and (
            (i < last and sections[i + 1][4] > depth) or not _NON_SPACE.search(joined, first, end)
        ):
            continue
        if crumb is None:
            title = base_title or "(introduction)"
        else:
            title = _join_title(base_title, " > ".join(crumb))
        section = joined[first:end]
        body = section.strip("\n")
        if len(body) <= max_chars:
            pieces.append(Piece(title, body, "markdown"))
        else:
            pieces.extend(_pack_section(title, section, max_chars))
    return pieces


# -- JSON ------------------------------------------------------------------------------------


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=1)


def _key_path(parent: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{parent}[{key}]"
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", key):
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{json.dumps(key, ensure_ascii=False)}]"


def _json_pieces(path: str, value: Any, max_chars: int, out: list[Piece]) -> None:
    text = _dump(value)
    container = isinstance(value, dict | list) and bool(value)
    # The top level is always split by key so that titles name the keys.
    if not container or (path and len(text) <= max_chars):
        if len(text) > max_chars:  # a huge scalar string
            out.extend(_line_windows(text.splitlines() or [text], 1, max_chars, path, "json"))
        else:
            out.append(Piece(_title(path or "$"), f"{path or '$'}: {text}", "json"))
        return
    items: list[tuple[str | int, Any]] = (
        list(value.items()) if isinstance(value, dict) else list(enumerate(value))
    )
    target = min(TARGET_CHUNK_CHARS, max_chars)
    group: list[tuple[str | int, str]] = []
    size = 0

    def flush() -> None:
        nonlocal group, size
        if not group:
            return
        if isinstance(group[0][0], int):
            span = f"[{group[0][0]}]" if len(group) == 1 else f"[{group[0][0]}-{group[-1][0]}]"
            title = f"{path}{span}" if path else span
        else:
            names = ", ".join(str(k) for k, _ in group)
            title = f"{path} ({names})" if path else names
        body = "\n".join(f"{_key_path(path, k)}: {t}" for k, t in group)
        out.append(Piece(_title(title), body, "json"))
        group, size = [], 0

    for key, child in items:
        child_text = _dump(child)
        if len(child_text) > target:
            flush()
            _json_pieces(_key_path(path, key), child, max_chars, out)
            continue
        if group and size + len(child_text) > target:
            flush()
        group.append((key, child_text))
        size += len(child_text) + len(str(key)) + 4
    flush()


def chunk_json(text: str, *, base_title: str = "", max_chars: int = MAX_CHUNK_CHARS) -> list[Piece]:
    """JSON split by key path (``a.b[3]``); invalid JSON falls back to plain text."""
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, RecursionError):
        return chunk_text(text, base_title=base_title, max_chars=max_chars)
    out: list[Piece] = []
    _json_pieces("", value, max_chars, out)
    if base_title:
        out = [Piece(_join_title(base_title, p.title), p.content, p.kind) for p in out]
    return out


# -- source code -----------------------------------------------------------------------------

#: A line that starts a definition in most languages, matched in ``_joined_lines`` text: a line
#: start, then blanks that stay on that line (``[^\S\n]``, what ``\s`` is within one line).
_DEF_AFTER = (
    r"(?:export[^\S\n]+(?:default[^\S\n]+)?)?(?:pub(?:\([a-z]+\))?[^\S\n]+)?"
    r"(?:async[^\S\n]+)?(?:static[^\S\n]+)?"
    r"(?:def|function\*?|class|fn|func|interface|struct|enum|impl|trait|module|sub|type)\b"
)
#: The first line by ``_DEF_START``, the others after a "\n" (found far faster than ``^``).
_DEF_LINE = re.compile(r"\n" + _DEF_AFTER)
_DEF_START = re.compile(_DEF_AFTER)


def _code_slices(lines: list[str], starts: list[tuple[int, str]]) -> list[tuple[str, int, int]]:
    """(title, first, last) line ranges (0-based, inclusive) from definition start lines."""
    slices: list[tuple[str, int, int]] = []
    first_def = starts[0][0] if starts else len(lines)
    if first_def > 0:
        slices.append(("(module)", 0, first_def - 1))
    for i, (start, name) in enumerate(starts):
        end = starts[i + 1][0] - 1 if i + 1 < len(starts) else len(lines) - 1
        slices.append((name, start, end))
    return slices


def _python_starts(text: str) -> list[tuple[int, str]] | None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return None
    starts: list[tuple[int, str]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            word = "class" if isinstance(node, ast.ClassDef) else "def"
            starts.append((first - 1, f"{word} {node.name}"))
    return starts


def _regex_starts(joined: str) -> list[tuple[int, str]]:
    """(0-based line, title) of the lines of ``joined`` (``_joined_lines``) that open a
    definition (``_DEF_LINE``), titled by the line itself."""
    found = [m.start() + 1 for m in _DEF_LINE.finditer(joined)]
    if _DEF_START.match(joined):
        found.insert(0, 0)
    starts: list[tuple[int, str]] = []
    number = at = 0
    for start in found:
        number += joined.count("\n", at, start)
        at = start
        end = joined.find("\n", start)
        line = joined[start:] if end < 0 else joined[start:end]
        starts.append((number, line.strip().rstrip("{:").strip()[:80]))
    return starts


def chunk_code(
    text: str, *, base_title: str = "", language: str = "", max_chars: int = MAX_CHUNK_CHARS
) -> list[Piece]:
    """Source split at top-level definitions (Python via ``ast``, others by column-0 regex)."""
    lines = text.splitlines()
    starts = _python_starts(text) if language in {"py", "pyi", "python"} else None
    if starts is None:
        starts = _regex_starts(_joined_lines(text))
    pieces: list[Piece] = []
    for name, first, last in _code_slices(lines, starts):
        body = lines[first : last + 1]
        content = "\n".join(body).strip("\n")
        if not _NON_SPACE.search(content):
            continue
        title = _join_title(base_title, name)
        if len(content) <= max_chars:
            pieces.append(Piece(title, content, "code"))
        else:
            for part in _line_windows(body, first + 1, max_chars, title, "code"):
                pieces.append(part)
    return pieces


# -- dispatch --------------------------------------------------------------------------------


def _plain_suffix(base: str) -> str:
    dot = base.rfind(".")
    return base[dot:] if 0 < dot < len(base) - 1 else ""


#: Whether this Python's pathlib gives a name's suffix as ``_plain_suffix`` does (checked once
#: on the names where versions could differ; pathlib decides otherwise).
_PLAIN_SUFFIX_OK = all(
    _plain_suffix(n) == PurePosixPath(n).suffix for n in ("a.", "a.b", ".a", "..", "a..b", ".a.b")
)


def _suffix(name: str) -> str:
    """``PurePosixPath(name).suffix``, without building a path for an ordinary name."""
    base = name.rpartition("/")[2]
    if not _PLAIN_SUFFIX_OK or not base or base == ".":  # a trailing "/" or "." component
        return PurePosixPath(name).suffix
    return _plain_suffix(base)


def kind_for_name(name: str) -> str:
    """ "markdown" | "json" | "code" | "text" from a file name's extension."""
    suffix = _suffix(name).lower()
    if suffix in MARKDOWN_EXTS:
        return "markdown"
    if suffix in JSON_EXTS:
        return "json"
    if suffix in CODE_EXTS:
        return "code"
    return "text"


#: A line that makes unnamed content markdown: an ATX heading or a ``` fence (the first line by
#: ``_MARKDOWN_SIGN_START``; after a "\n" the others, found far faster than with ``^``).
_MARKDOWN_SIGN = re.compile(r"\n {0,3}(?:#{1,6}[ \t]+\S|```)")
_MARKDOWN_SIGN_START = re.compile(r" {0,3}(?:#{1,6}[ \t]+\S|```)")


def sniff_kind(text: str) -> str:
    """Guess the kind of unnamed content (command output, pasted text, fetched bodies)."""
    stripped = text.lstrip()
    if stripped[:1] in {"{", "["}:
        try:
            json.loads(stripped)
            return "json"
        except (json.JSONDecodeError, RecursionError):
            pass
    if _MARKDOWN_SIGN.search(text) or _MARKDOWN_SIGN_START.match(text):
        return "markdown"
    return "text"


def chunk_as(
    text: str, kind: str, *, base_title: str = "", language: str = "",
    max_chars: int = MAX_CHUNK_CHARS,
) -> list[Piece]:  # fmt: skip
    """Chunk ``text`` as the given kind."""
    if kind == "markdown":
        return chunk_markdown(text, base_title=base_title, max_chars=max_chars)
    if kind == "json":
        return chunk_json(text, base_title=base_title, max_chars=max_chars)
    if kind == "code":
        return chunk_code(text, base_title=base_title, language=language, max_chars=max_chars)
    return chunk_text(text, base_title=base_title, max_chars=max_chars)


def chunk_document(
    text: str, name: str, *, base_title: str = "", max_chars: int = MAX_CHUNK_CHARS
) -> list[Piece]:
    """Chunk a file's text according to its name."""
    kind = kind_for_name(name)
    language = _suffix(name).lower().lstrip(".")
    return chunk_as(text, kind, base_title=base_title, language=language, max_chars=max_chars)


def chunk_content(
    text: str, *, base_title: str = "", max_chars: int = MAX_CHUNK_CHARS
) -> list[Piece]:
    """Chunk unnamed content by what it looks like (JSON, markdown, else plain text)."""
    return chunk_as(text, sniff_kind(text), base_title=base_title, max_chars=max_chars)
