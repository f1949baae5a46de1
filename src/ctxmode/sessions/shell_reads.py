"""Files a shell command only reads (``cat F``, ``head -n 5 F``, ``sed -n '1,20p' F``...).

Codex has no read tool: it reads files with shell commands, and every agent's model does so at
times. ``read_paths`` tells, from the command text alone, which project files a command shows,
so they are recorded as reads. Precision over recall: a command counts only when every part of
it is understood.

- Readers: ``cat``, ``head``, ``tail``, ``nl``, ``less``, ``more`` with plain files, and
  ``sed -n`` with a print-only script (``'1,20p'``, ``'$p'``); ``sed -i`` never.
- Chains (``&&``, ``||``, ``;``, new lines) are read part by part; ``cd DIR`` moves the folder
  later relative paths resolve against. A pipeline counts when its first command reads and the
  rest only filter what it shows (``head``, ``grep``, ``wc``, ``sort``...); ``cat F | python``
  does not.
- Not reads: output redirected to a file (``cat > F <<EOF``, ``cat a > b``), here-documents,
  command substitution, subshells, variables and globs, paths outside ``root`` (the folder the
  agent works in), ``-`` (stdin).
- ``bash -lc 'SCRIPT'`` and argv lists (``["bash", "-lc", "cat F"]``) are unwrapped once.

Never raises: odd input yields no paths. Standard library only (the hook path).
"""

from __future__ import annotations

import os
import re

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time (see _lean)
if TYPE_CHECKING:
    from typing import Any

#: At most this many files per command.
MAX_PATHS = 5
_READERS = frozenset({"cat", "head", "tail", "nl", "less", "more", "sed"})
#: Commands that only filter or count what the reader shows, after a ``|``.
_FILTERS = frozenset(
    {"head", "tail", "grep", "egrep", "fgrep", "rg", "wc", "sort", "uniq", "cut", "nl", "less",
     "more", "cat", "tr", "column"}
)  # fmt: skip
_SHELLS = frozenset({"sh", "bash", "zsh", "dash"})
#: Options that take a value (``head -n 5``), per reader.
_VALUE_OPTS = {
    "head": frozenset({"-n", "-c", "--lines", "--bytes"}),
    "tail": frozenset({"-n", "-c", "--lines", "--bytes", "-s", "--pid", "--sleep-interval"}),
    "nl": frozenset({"-b", "-d", "-f", "-h", "-i", "-l", "-n", "-s", "-v", "-w"}),
}
_SED_PRINT = re.compile(r"(?:\s*(?:(?:\d+|\$)(?:\s*,\s*(?:\d+|\$|\+\d+))?)?\s*p\s*;?\s*)+")
#: ``2>/dev/null``, ``2>>/dev/null``, ``2>&1``: stderr redirections that leave a read a read.
_STDERR = frozenset({(">", "/dev/null"), (">>", "/dev/null"), (">&", "1")})
_NOT_LITERAL = re.compile(r"[$`*?\[\]{}~]")
_SEPARATORS = frozenset({"&&", "||", ";"})


def command_text(value: Any) -> str:
    """A shell tool's ``command`` as one script: a string as is; an argv list joined, with a
    ``bash -lc SCRIPT`` wrapper removed. Anything else: ``""``."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return ""
    if len(value) == 3 and os.path.basename(value[0]) in _SHELLS and _is_c_flag(value[1]):
        return str(value[2])
    import shlex

    return shlex.join(value)


def _is_c_flag(word: str) -> bool:
    return word.startswith("-") and not word.startswith("--") and word.endswith("c")


def _words(line: str) -> list[str] | None:
    import shlex

    lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>()")
    lexer.whitespace_split = True
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes
        return None


def _unwrap(words: list[str]) -> list[str] | None:
    """``bash -lc 'SCRIPT'`` -> SCRIPT's words (one level)."""
    if len(words) == 3 and os.path.basename(words[0]) in _SHELLS and _is_c_flag(words[1]):
        inner = _words(words[2])
        if inner is None or (len(inner) == 3 and os.path.basename(inner[0]) in _SHELLS):
            return None
        return inner
    return words


def _drop_stderr(words: list[str]) -> list[str] | None:
    """The command without ``2>/dev/null`` / ``2>&1``; None when it redirects anything else."""
    out: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        if out and out[-1] == "2" and i + 1 < len(words) and (word, words[i + 1]) in _STDERR:
            out.pop()
            i += 2
            continue
        if word and word[0] in "<>&()|;":
            return None
        out.append(word)
        i += 1
    return out


def _files(words: list[str]) -> list[str] | None:
    """The files a reader command shows; None when it is not a pure read."""
    name, args = os.path.basename(words[0]), words[1:]
    if name not in _READERS:
        return None
    files: list[str] = []
    options_done = False
    if name == "sed":
        quiet, script = False, None
        i = 0
        while i < len(args):
            arg = args[i]
            if not options_done and arg == "--":
                options_done = True
            elif not options_done and arg in ("-n", "--quiet", "--silent"):
                quiet = True
            elif not options_done and arg in ("-e", "--expression") and i + 1 < len(args):
                if script is not None:
                    return None
                script = args[i + 1]
                i += 1
            elif not options_done and arg.startswith("-"):
                return None  # -i (in place), -f script files, -s...: not a plain read
            elif script is None:
                script = arg
            else:
                files.append(arg)
            i += 1
        if not quiet or script is None or not _SED_PRINT.fullmatch(script):
            return None
        return files
    i = 0
    while i < len(args):
        arg = args[i]
        if not options_done and arg == "--":
            options_done = True
        elif not options_done and arg.startswith("-") and arg != "-":
            if arg in _VALUE_OPTS.get(name, ()):
                i += 1  # its value
        elif not options_done and arg.startswith("+") and name in ("less", "more", "tail"):
            pass  # a start line (``more +10 F``)
        else:
            files.append(arg)
        i += 1
    return files


def read_paths(command: str, root: str | None, start: str | None = None) -> tuple[list[str], bool]:
    """Absolute paths (under ``root``) of the files ``command`` reads, relative ones resolved
    against ``start`` (default ``root``), and whether reading (and ``cd``) is all it does.
    ``([], False)`` for anything not understood."""
    try:
        return _read_paths(command, root, start)
    except Exception:  # noqa: BLE001 - the hook path fails open: odd input is no read
        return [], False


def _read_paths(command: str, root: str | None, start: str | None) -> tuple[list[str], bool]:
    if not command or len(command) > 4000 or "<<" in command or "$(" in command:
        return [], False
    if not any(reader in command for reader in _READERS):
        return [], False
    top = os.path.normpath(root) if root and os.path.isabs(root) else None
    where = os.path.normpath(start) if start and os.path.isabs(start) else top
    out: list[str] = []
    pure = True
    for line in command.replace("\\\n", " ").splitlines():
        words = _words(line)
        words = _unwrap(words) if words is not None else None
        if words is None:
            return [], False
        # chains: split on && || ; (a pipeline stays one part)
        parts: list[list[str]] = [[]]
        for word in words:
            if word in _SEPARATORS:
                parts.append([])
            else:
                parts[-1].append(word)
        for part in parts:
            if not part:
                continue
            if part[0] == "cd":
                where = _cd(where, part[1:])
                continue
            stages: list[list[str]] = [[]]
            for word in part:
                if word == "|":
                    stages.append([])
                else:
                    stages[-1].append(word)
            first = _drop_stderr(stages[0]) if stages[0] else None
            files = _files(first) if first else None
            later_ok = all(
                s and os.path.basename(s[0]) in _FILTERS and _drop_stderr(s) is not None
                for s in stages[1:]
            )
            if not files or not later_ok:
                pure = False
                continue
            for name in files:
                path = _inside(where, top, name)
                if path is None:
                    pure = False
                elif path not in out:
                    out.append(path)
    return out[:MAX_PATHS], pure and bool(out)


def _cd(where: str | None, args: list[str]) -> str | None:
    if len(args) != 1 or where is None or _NOT_LITERAL.search(args[0]) or args[0] == "-":
        return None  # somewhere we cannot tell
    return os.path.normpath(os.path.join(where, args[0]))


def _inside(where: str | None, top: str | None, name: str) -> str | None:
    if not name or name == "-" or _NOT_LITERAL.search(name) or where is None or top is None:
        return None
    path = os.path.normpath(os.path.join(where, name))
    if path != top and not path.startswith(top.rstrip(os.sep) + os.sep):
        return None
    return path
