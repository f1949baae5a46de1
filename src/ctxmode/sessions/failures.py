"""What a failing command said: its informative lines, in order of use, and its error type.

A test run or a build that fails prints hundreds of lines; the few that say what broke are the
failing test's id and message, the assertion or exception, and ``file:line: error`` lines of
compilers, linters and type checkers. The summary line (``1 failed, 1 passed``) comes last: it
says that something broke, not what. ``informative_lines`` keeps those lines verbatim (the
tool's own words), deduplicated, within a character budget.

``looks_failed`` tells a failure from the output alone, for agents whose payload has no exit
code (Codex, Gemini CLI): only strong, tool-specific signals count, so that ordinary output
that mentions an error is not taken for a failure.

Hook path: standard library only; patterns compile on first use (``LazyRegex``).
"""

from __future__ import annotations

from ctxmode.core._lean import LazyRegex

#: Lines that name what failed, by tool (checked in this order; each line counted once).
_PRIMARY = LazyRegex(
    r"^(?:FAILED|ERROR)\s+\S+::\S+"  # pytest short summary: FAILED tests/x.py::test_y - Msg
    r"|^(?:FAIL|ERROR):\s+\w+\s+\([\w.]+\)"  # unittest: FAIL: test_x (pkg.TestCase...)
    r"|^---\s+FAIL:\s+\S+"  # go test: --- FAIL: TestParseEmail (0.00s)
    r"|^●\s+\S.*"  # jest: ● Suite › test name
    r"|^(?:×|✕|✗|✖)\s+\S.*"  # vitest / jest / node:test: × test name
    r"|^FAIL\s+\S+\s+>\s+\S.*"  # vitest: FAIL src/x.test.ts > suite > name
    r"|^\d+\)\s+\S.*"  # mocha: 1) suite name
    r"|^test\s+\S+\s+\.\.\.\s+FAILED"  # cargo test: test tests::x ... FAILED
    r"|^----\s+\S+\s+stdout\s+----"  # cargo test: ---- tests::x stdout ----
    r"|^thread\s+'[^']*'\s+panicked\s+at\b.*"  # rust panic
    r"|^error(?:\[E\d+\])?:\s+\S.*"  # rustc, git, generic 'error: ...'
    r"|^fatal(?: error)?:\s+\S.*"  # git, gcc
    r"|^\S+?\.\w+[(:]\d+(?:[,:]\d+)?\)?:?\s*(?:-\s*)?(?:fatal\s+)?error\b.*"  # gcc/tsc/mypy/javac
    r"|^\S+?\.\w+:\d+:\d+:\s+[A-Z]+\d+\b.*"  # ruff: x.py:1:8: F401 ...
    r"|^\s*\d+:\d+\s+error\s+\S.*"  # eslint: 12:5  error  'x' is ...  rule
    r"|^\[ERROR\]\s+\S.*"  # maven
    r"|^npm (?:ERR!|error)\s+\S.*"  # npm
    r"|^error\s+\S.*"  # yarn: error Command failed ...
    r"|^Exception in thread\s+\S.*"  # java
    r"|^(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception|Failure|Exit|Interrupt|Reused|Expired|Denied)"
    r"(?:\s*\[[\w_]+\])?:\s*\S.*"  # Python / Node / Java exception line: TypeError: ...
    r"|^[A-Z]\w*(?:Error|Exception)$"  # bare exception line
    r"|^E\s{2,}\S.*"  # pytest assertion detail: E   assert 1 == 2
    r"|^(?:Expected|Received|expected|received|actual|Actual)(?:\s+\w+)?:\s.*"  # jest, mocha
    r"|^\S+_test\.go:\d+:\s+\S.*"  # go test: x_test.go:12: got nil error, want ErrNoDomain
    r"|^\s*(?:left|right):\s+\S.*"  # rust assert_eq
    r"|^assertion\s+.*failed.*"  # rust: assertion `left == right` failed
    r"|^AssertionError\b.*"
    r"|^\S.{0,80} !==? \S.{0,80}$"  # node assert: 0 !== 1
    r"|^symbol:\s+\S.*"  # javac: symbol:   variable path
    r"|^nothing (?:to commit|added to commit)\b.*"  # git commit with nothing staged
    r"|^(?:\S+: )?\S+:\s+command not found$"
    r"|^(?:bash|sh|zsh): .*(?:No such file or directory|Permission denied)$",
)
#: Lines that identify the failing test (they lead: the rest explains them).
_TEST_ID = LazyRegex(
    r"^(?:FAILED|ERROR)\s+\S+::\S+|^(?:FAIL|ERROR):\s+\w+\s+\(|^---\s+FAIL:\s|^●\s"
    r"|^FAIL\s+\S+\s+>\s|^test\s+\S+\s+\.\.\.\s+FAILED"
    r"|^\[ERROR\]\s+\S+\.\w+\s+(?:--\s+)?Time elapsed"
)
#: Where it broke: the last frame of a traceback, a ``--> file:line`` of rustc.
_LOCATION = LazyRegex(
    r'^File "[^"]+", line \d+.*|^at \S+ \(\S+:\d+:\d+\)$|^at \S+\(\S+\.java:\d+\)$'
    r"|^-->\s+\S+:\d+:\d+$|^\S+\.py:\d+: \w+$"
)
#: Summary lines: that it failed and how much.
_SUMMARY = LazyRegex(
    r"(?i)^=*\s*(?:\d+ (?:failed|errors?)\b.*)"  # pytest: 1 failed, 1 passed in 0.04s
    r"|^Tests?:\s+.*\bfailed\b.*"  # jest: Tests: 1 failed, 5 passed, 6 total
    r"|^Test Suites?:\s+.*\bfailed\b.*"
    r"|^test result: FAILED\b.*"  # cargo
    r"|^FAILED \((?:failures|errors)=\d+.*\)"  # unittest
    r"|^FAIL(?:\s+\S+\s+[\d.]+s)?$"  # go test
    r"|^\d+ failing$"  # mocha
    r"|^(?:\[ERROR\]\s+)?Tests run:.*(?:Failures|Errors): [1-9].*"  # maven / junit
    r"|^Found \d+ errors? in \d+ files?.*"  # mypy
    r"|^Found \d+ errors?\.?$"  # ruff / tsc
    r"|^\S*\s*\d+ problems? \(\d+ errors?.*"  # eslint
    r"|^BUILD FAILURE$|^\d+ errors?$"
)
#: Generic fallback: a line that names an error, for formats nothing above knows.
_NAMES_ERROR = LazyRegex(r"(?i)\b(?:error|failed|failure|fatal|panic|exception|traceback)\b")
#: The exception / error type a message names.
_ERROR_TYPE = LazyRegex(
    r"\b([A-Z][A-Za-z0-9_]*(?:Error|Exception|Failure|Reused|Expired|Denied|Exit))\b"
)
_TS_CODE = LazyRegex(r"\berror (TS\d+)\b|\berror\[(E\d+)\]|:\d+:\d+: ([A-Z]+\d+)\b")
_EXIT_CODE = LazyRegex(r"(?i)\bexit (?:code|status)[:\s]+(\d+)")
_FAILED_CODE = LazyRegex(r"(?i)^(?:exit code|exit status)[:\s]+(\d+)$")
#: Strong signs that output is a failure, for payloads with no exit code.
_FAILED_OUTPUT = LazyRegex(
    r"(?m)^(?:FAILED|ERROR)\s+\S+::\S+"
    r"|^=+ .*\b\d+ (?:failed|errors?)\b.*=+$"
    r"|^\d+ failed\b.*\bin [\d.]+s"
    r"|^---\s+FAIL:\s"
    r"|^FAIL\s*(?:\t|$)"
    r"|^Tests:\s+.*\b\d+ failed\b"
    r"|^test result: FAILED\b"
    r"|^FAILED \((?:failures|errors)=\d+"
    r"|^Traceback \(most recent call last\):"
    r"|^npm (?:ERR!|error) "
    r"|^error(?:\[E\d+\])?: "
    r"|^fatal: "
    r"|^\S+\.\w+[(:]\d+(?:[,:]\d+)?\)?:?\s*(?:-\s*)?error\b"
    r"|^Found \d+ errors? in \d+ files?"
    r"|^\[ERROR\] "
    r"|^BUILD FAILURE$"
    r"|^(?:\S+: )?\S+: command not found$"
    r"|^Exception in thread "
    r"|^\s*\d+ failing$"
    r"|(?:^|\n)Exit code:? [1-9]\d*\s*$"
)

LINE_CHARS = 240


def _clean(line: str) -> str:
    line = line.strip()
    if line.startswith("E ") and line[1:2] == " ":
        line = "E " + line[1:].strip()
    return line.strip("= ").strip() if line.startswith("=") else line


def informative_lines(text: str, max_chars: int = 400) -> list[str]:
    """The lines of a failure's output that say what broke, most useful first, verbatim.

    Failing test ids and messages, exception and assertion lines, ``file:line: error`` lines,
    then where it broke, then the summary; unknown formats fall back to the lines that name an
    error (the last ones, which are usually the cause), never just the last line. Each line is
    kept once and cut at ``LINE_CHARS``; the list stops when ``max_chars`` is spent.
    """
    lines = [ln.rstrip() for ln in text.splitlines()]
    ids: list[str] = []
    primary: list[str] = []
    where: list[str] = []
    summary: list[str] = []
    for raw in lines:
        stripped = raw.strip()
        if not stripped or _FAILED_CODE.match(stripped):
            continue
        if _SUMMARY.match(stripped):
            summary.append(_clean(stripped))
        elif _TEST_ID.match(stripped):
            ids.append(_clean(stripped))
        elif _PRIMARY.match(stripped) or _PRIMARY.match(raw):
            primary.append(_clean(stripped))
        elif _LOCATION.match(stripped):
            where.append(stripped)
    if not primary and not ids:
        named = [
            _clean(ln)
            for ln in lines
            if ln.strip() and _NAMES_ERROR.search(ln) and ln not in summary
        ]
        primary = [ln for ln in named if ln not in summary][-3:]
    # Python names the failing frame last; Node and Java first (then their internals).
    frames = [w for w in where if w.startswith("at ") and "(node:" not in w]
    located = frames[:1] if frames else where[-1:]
    ordered = ids + primary + located + summary[-1:]
    if not ordered:
        rest = [ln.strip() for ln in lines if ln.strip() and not _FAILED_CODE.match(ln.strip())]
        ordered = rest[-2:]
    out: list[str] = []
    seen: set[str] = set()
    used = 0
    for line in ordered:
        line = line if len(line) <= LINE_CHARS else line[: LINE_CHARS - 1] + "…"
        key = line.casefold()
        # pytest's "E   Msg" repeats what the FAILED line already says: kept once.
        body = key[2:] if key.startswith("e ") else key
        if key in seen or any(body in s for s in seen):
            continue
        if out and used + len(line) > max_chars:
            break
        seen.add(key)
        out.append(line)
        used += len(line) + 3
    return out


def error_type(text: str, lines: list[str] | None = None) -> str:
    """The error's type: the exception a line names, a compiler's code, else ``exit N``."""
    for line in lines if lines is not None else informative_lines(text):
        m = _ERROR_TYPE.search(line)
        if m:
            return m.group(1)
        code = _TS_CODE.search(line)
        if code:
            return next(g for g in code.groups() if g)
    m = _ERROR_TYPE.search(text)
    if m:
        return m.group(1)
    code = _EXIT_CODE.search(text)
    return f"exit {code.group(1)}" if code else "error"


#: Commands that only show text: what they print is a file's content, not their own failure.
_VIEWER = LazyRegex(
    r"^\s*(?:cat|head|tail|less|more|grep|rg|sed|awk|nl|bat|git (?:show|log|diff))\b"
)
_NOTHING_COMMITTED = LazyRegex(
    r"(?m)^nothing (?:to commit|added to commit)\b|^no changes added to commit\b"
)


def looks_failed(output: str, command: str = "") -> bool:
    """Whether output without an exit code is a failure: strong, tool-specific signs only.

    A command that only shows text (``cat``, ``grep``, ``git log``...) never counts as failed
    by what it printed; ``git commit`` with nothing staged does (git exits 1), ``git status``
    saying the same does not.
    """
    if not output or _VIEWER.match(command):
        return False
    if "commit" in command.split() and _NOTHING_COMMITTED.search(output):
        return True
    return _FAILED_OUTPUT.search(output) is not None


def is_summary(line: str) -> bool:
    """Is a line a run's summary (``1 failed, 13 passed in 0.81s``, ``Found 2 errors``)?"""
    return _SUMMARY.match(line.strip().strip("= ")) is not None


__all__ = ["LINE_CHARS", "error_type", "informative_lines", "is_summary", "looks_failed"]
