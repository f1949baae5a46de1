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
from dataclasses import dataclass
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


def _line_windows(
    lines: list[str], first_line: int, max_chars: int, base: str, kind: str
) -> list[Piece]:
    """Consecutive lines grouped up to ``WINDOW_LINES`` lines and ``max_chars`` characters."""
    pieces: list[Piece] = []
    buf: list[str] = []
    size = 0
    start = first_line

    def flush(end: int) -> None:
        nonlocal buf, size
        text = "\n".join(buf).strip("\n")
        if text.strip():
            head = next((ln.strip() for ln in buf if ln.strip()), "")[:60]
            label = f"lines {start}-{end}" + (f": {head}" if head else "")
            pieces.append(Piece(_join_title(base, label), text, kind))
        buf, size = [], 0

    last = first_line
    for offset, raw in enumerate(lines):
        number = first_line + offset
        # A single line longer than the cap is cut into cap-sized slices.
        for line in [raw[i : i + max_chars] for i in range(0, len(raw), max_chars)] or [""]:
            if buf and (len(buf) >= WINDOW_LINES or size + len(line) + 1 > max_chars):
                flush(last)
            if not buf:
                start = number
            buf.append(line)
            size += len(line) + 1
            last = number
    if buf:
        flush(last)
    return pieces


#: Where a sentence ends: after 。！？； (and the closing quotes or brackets that follow), after
#: . ! ? followed by a space, and at a line break; the spaces after it stay with it.
_SENTENCE_END = re.compile(r"(?:[。！？；][”’」』）》】)\]\"']*|[.!?][”’)\]\"']*(?=\s)|\n)\s*")
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
            while len(clause) > limit:
                if part:
                    out.append(part)
                    part = ""
                out.append(clause[:limit])
                clause = clause[limit:]
            if part and len(part) + len(clause) > limit:
                out.append(part)
                part = ""
            part += clause
        if part:
            out.append(part)
    return out


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
            head = " ".join(body.split())[:60]
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


def _is_prose(lines: list[str]) -> bool:
    """Long lines, on average: sentences, not a log or a listing."""
    return sum(map(len, lines)) >= PROSE_LINE_CHARS * len(lines)


def chunk_text(
    text: str, *, base_title: str = "", max_chars: int = MAX_CHUNK_CHARS, kind: str = "text"
) -> list[Piece]:
    """Plain text: paragraphs grouped up to the target size; a long paragraph of prose cut into
    passages at sentence ends (``_passages``); line windows for other long paragraphs."""
    lines = text.splitlines()
    # Paragraphs as (first line number, lines); blank lines separate them.
    paragraphs: list[tuple[int, list[str]]] = []
    current: list[str] = []
    start = 1
    for number, line in enumerate(lines, start=1):
        if line.strip():
            if not current:
                start = number
            current.append(line)
        elif current:
            paragraphs.append((start, current))
            current = []
    if current:
        paragraphs.append((start, current))
    target = min(TARGET_CHUNK_CHARS, max_chars)
    pieces: list[Piece] = []
    group: list[tuple[int, list[str]]] = []
    group_size = 0

    def flush_group() -> None:
        nonlocal group, group_size
        if group:
            first, last = group[0][0], group[-1][0] + len(group[-1][1]) - 1
            body = "\n\n".join("\n".join(p) for _, p in group)
            head = group[0][1][0].strip()[:60]
            pieces.append(
                Piece(_join_title(base_title, f"{head} (lines {first}-{last})"), body, kind)
            )
        group, group_size = [], 0

    for first, para in paragraphs:
        size = sum(len(ln) + 1 for ln in para)
        if size > target and _is_prose(para):
            flush_group()
            pieces.extend(_passages("\n".join(para), first, base_title, kind, max_chars))
            continue
        if size > max_chars or len(para) > WINDOW_LINES * 2:
            flush_group()
            pieces.extend(_line_windows(para, first, max_chars, base_title, kind))
            continue
        if group and group_size + size > target:
            flush_group()
        group.append((first, para))
        group_size += size + 1
    flush_group()
    return pieces


# -- markdown --------------------------------------------------------------------------------

_HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t]*#*[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")


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


def _pack_section(title: str, lines: list[str], max_chars: int) -> list[Piece]:
    text = "\n".join(lines).strip("\n")
    if len(text) <= max_chars:
        return [Piece(title, text, "markdown")]
    pieces: list[str] = []
    buf = ""
    for kind, block in _blocks(lines):
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
        for unit in units:
            if buf and len(buf) + len(unit) + 2 > max_chars:
                pieces.append(buf)
                buf = ""
            buf = f"{buf}\n\n{unit}" if buf else unit
    if buf:
        pieces.append(buf)
    if len(pieces) == 1:
        return [Piece(title, pieces[0], "markdown")]
    out = []
    for i, part in enumerate(pieces, start=1):
        head = next((ln.strip() for ln in part.splitlines() if ln.strip()), "")[:60]
        label = f"{title} (part {i}/{len(pieces)})" + (f": {head}" if i > 1 and head else "")
        out.append(Piece(_title(label), part, "markdown"))
    return out


def chunk_markdown(
    text: str, *, base_title: str = "", max_chars: int = MAX_CHUNK_CHARS
) -> list[Piece]:
    """Markdown split at ATX headings (never inside a code fence), titled by breadcrumb."""
    sections: list[tuple[str, list[str], bool, int]] = []  # (title, lines, has_body, level)
    stack: list[tuple[int, str]] = []
    level = 0
    title = base_title or "(introduction)"
    current: list[str] = []
    has_body = False
    fence_marker = ""
    for line in text.splitlines():
        m_fence = _FENCE.match(line)
        if fence_marker:
            if (
                m_fence
                and m_fence.group(1)[0] == fence_marker[0]
                and len(m_fence.group(1)) >= len(fence_marker)
            ):
                fence_marker = ""
            current.append(line)
            has_body = True
            continue
        if m_fence:
            fence_marker = m_fence.group(1)
            current.append(line)
            has_body = True
            continue
        m = _HEADING.match(line)
        if m:
            sections.append((title, current, has_body, level))
            level, name = len(m.group(1)), m.group(2).strip()
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, name))
            title = _join_title(base_title, " > ".join(n for _, n in stack))
            current, has_body = [line], False
            continue
        current.append(line)
        if line.strip():
            has_body = True
    sections.append((title, current, has_body, level))
    pieces: list[Piece] = []
    for i, (sec_title, lines, body, depth) in enumerate(sections):
        # A heading directly followed by a sub-heading adds nothing its children's breadcrumb
        # does not already say; one followed by a sibling, or ending the file, is kept (an
        # outline of headings alone stays findable).
        child_follows = i + 1 < len(sections) and sections[i + 1][3] > depth
        if not body and (child_follows or not any(ln.strip() for ln in lines)):
            continue
        pieces.extend(_pack_section(sec_title, lines, max_chars))
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

_DEF_LINE = re.compile(
    r"^(?:export\s+(?:default\s+)?)?(?:pub(?:\([a-z]+\))?\s+)?(?:async\s+)?(?:static\s+)?"
    r"(?:def|function\*?|class|fn|func|interface|struct|enum|impl|trait|module|sub|type)\b"
)


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


def chunk_code(
    text: str, *, base_title: str = "", language: str = "", max_chars: int = MAX_CHUNK_CHARS
) -> list[Piece]:
    """Source split at top-level definitions (Python via ``ast``, others by column-0 regex)."""
    lines = text.splitlines()
    starts = _python_starts(text) if language in {"py", "pyi", "python"} else None
    if starts is None:
        starts = []
        for number, line in enumerate(lines):
            if _DEF_LINE.match(line):
                starts.append((number, line.strip().rstrip("{:").strip()[:80]))
    pieces: list[Piece] = []
    for name, first, last in _code_slices(lines, starts):
        body = lines[first : last + 1]
        content = "\n".join(body).strip("\n")
        if not content.strip():
            continue
        title = _join_title(base_title, name)
        if len(content) <= max_chars:
            pieces.append(Piece(title, content, "code"))
        else:
            for part in _line_windows(body, first + 1, max_chars, title, "code"):
                pieces.append(part)
    return pieces


# -- dispatch --------------------------------------------------------------------------------


def kind_for_name(name: str) -> str:
    """ "markdown" | "json" | "code" | "text" from a file name's extension."""
    suffix = PurePosixPath(name).suffix.lower()
    if suffix in MARKDOWN_EXTS:
        return "markdown"
    if suffix in JSON_EXTS:
        return "json"
    if suffix in CODE_EXTS:
        return "code"
    return "text"


def sniff_kind(text: str) -> str:
    """Guess the kind of unnamed content (command output, pasted text, fetched bodies)."""
    stripped = text.lstrip()
    if stripped[:1] in {"{", "["}:
        try:
            json.loads(stripped)
            return "json"
        except (json.JSONDecodeError, RecursionError):
            pass
    if re.search(r"(?m)^ {0,3}#{1,6}[ \t]+\S", text) or re.search(r"(?m)^ {0,3}```", text):
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
    language = PurePosixPath(name).suffix.lower().lstrip(".")
    return chunk_as(text, kind, base_title=base_title, language=language, max_chars=max_chars)


def chunk_content(
    text: str, *, base_title: str = "", max_chars: int = MAX_CHUNK_CHARS
) -> list[Piece]:
    """Chunk unnamed content by what it looks like (JSON, markdown, else plain text)."""
    return chunk_as(text, sniff_kind(text), base_title=base_title, max_chars=max_chars)
