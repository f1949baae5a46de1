"""Running code in a subprocess: languages, process groups, timeouts, terminal-rendered output.

The code runs in its own process group (``start_new_session``) with cwd = the project root; on
timeout, on exceeding the output cap and after it exits, the whole group is killed. On Linux it
runs under a small reaper (``_REAPER``): a child subreaper (``PR_SET_CHILD_SUBREAPER``) that
every orphaned descendant is re-parented to, a ``setsid`` or double-forked one included, and
that kills them all when the code exits or the call ends; so no process the code started
outlives the call. Elsewhere (macOS) only the process group is killed: a descendant that left
the group (``setsid``) can survive there. The reaper also caps the code's memory
(``RLIMIT_DATA``, ``MAX_MEMORY_BYTES``); a run that fails for lack of memory says so in its
output. Output is read up to ``MAX_OUTPUT_BYTES`` and rendered as a terminal would show it
(``terminal_text``). Nothing here touches the store.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ctxmode.core import config
from ctxmode.core.errors import InvalidInput
from ctxmode.core.redact import drop_cut_tail, redact

#: Output above this size is digested even without an intent (bytes).
PLAIN_THRESHOLD_BYTES = 100_000


#: Reading stops (and the process group is killed) past this much stdout + stderr (bytes).
#: Redacting and indexing cost a few seconds per MB, which bounds this.
MAX_OUTPUT_BYTES = 2_000_000


DEFAULT_TIMEOUT_S = 30.0


MAX_TIMEOUT_S = config.SANDBOX_MAX_TIMEOUT_S


#: Seconds between SIGTERM and SIGKILL of a process group.
KILL_GRACE_S = 0.5


#: Data memory (heap and private writable mappings) a run may use (bytes); Linux only.
MAX_MEMORY_BYTES = 2 * 1024**3


#: The reaper: ``python -S -c _REAPER MEMORY_BYTES ARGV...``. It becomes a child subreaper,
#: runs ARGV as its child under the memory cap, waits for it, then SIGKILLs every process left
#: below it (orphans re-parent to it) until none is left; on SIGTERM (a timeout, a cut) it does
#: the same at once. It exits as the code did. Standard library only, ~10 ms to start.
_REAPER = r"""
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
limit, argv = int(sys.argv[1]), sys.argv[2:]

def children():
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children") as f:
            return [int(p) for p in f.read().split()]
    except OSError:
        pass
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat") as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == me:
                found.append(int(name))
    return found

def reap_all():
    for _ in range(10000):
        kids = children()
        for kid in kids:
            try:
                os.kill(kid, signal.SIGKILL)
            except OSError:
                pass
        try:
            while os.waitpid(-1, os.WNOHANG if kids else 0)[0]:
                pass
        except ChildProcessError:
            if not children():
                return

class Stop(Exception):
    pass

def on_term(signum, frame):
    raise Stop

signal.signal(signal.SIGTERM, on_term)
pid = os.fork()
if pid == 0:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    if limit:
        import resource
        resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        print(f"ctxmode: cannot run {argv[0]}: {exc}", file=sys.stderr)
        os._exit(127)
try:
    status = os.waitpid(pid, 0)[1]
except Stop:
    reap_all()
    os._exit(143)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
reap_all()
code = os.waitstatus_to_exitcode(status)
if code < 0:
    try:
        signal.signal(-code, signal.SIG_DFL)
    except (OSError, ValueError):
        pass  # SIGKILL and SIGSTOP keep their default
    os.kill(os.getpid(), -code)
os._exit(code)
"""


def _reaped(argv: Sequence[str]) -> list[str]:
    """``argv`` under the reaper where the platform has child subreapers (Linux)."""
    if not sys.platform.startswith("linux"):
        return list(argv)
    return [sys.executable, "-S", "-c", _REAPER, str(MAX_MEMORY_BYTES), *argv]


#: What a program prints when an allocation fails (the cap, or the machine's memory).
_OUT_OF_MEMORY = re.compile(
    r"MemoryError|Cannot allocate memory|out of memory|bad_alloc|heap out of memory"
    r"|failed to reserve|runtime: cannot allocate",
    re.IGNORECASE,
)


MAX_CODE_CHARS = 1_000_000


#: language -> (file extension, interpreter commands tried in order). ``{py}`` = this Python.
_LANGUAGES: dict[str, tuple[str, tuple[tuple[str, ...], ...]]] = {
    "shell": (".sh", (("bash",), ("sh",))),
    "python": (".py", (("{py}",),)),
    "javascript": (".js", (("node",),)),
    "typescript": (".ts", (("tsx",), ("bun", "run"), ("deno", "run", "-A"))),
    "ruby": (".rb", (("ruby",),)),
    "perl": (".pl", (("perl",),)),
    "php": (".php", (("php",),)),
    "lua": (".lua", (("lua",),)),
    "r": (".R", (("Rscript",),)),
    "go": (".go", (("go", "run"),)),
    "elixir": (".exs", (("elixir",),)),
}


_ALIASES = {
    "sh": "shell",
    "bash": "shell",
    "zsh": "shell",
    "py": "python",
    "python3": "python",
    "js": "javascript",
    "node": "javascript",
    "ts": "typescript",
    "rb": "ruby",
    "pl": "perl",
    "golang": "go",
}


#: Terminal escape sequences: CSI (colours, cursor moves), OSC (titles, links), character set
#: selections and the two-character ones. They mean nothing to an agent and cost tokens.
_ESCAPES = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[ -/]+[0-~]|[0-~])"
)


#: Cursor to a column, or erase in line: how npm-style progress redraws a line (like ``\r``).
_REDRAW = re.compile(r"\x1b\[[0-9;]*[GK]")


def terminal_text(text: str) -> str:
    """Output as a terminal would leave it: escape sequences dropped, and each line reduced to
    what its last carriage return wrote (a progress bar redrawn 200 times is its final state).
    """
    if "\x1b" in text:
        text = _ESCAPES.sub("", _REDRAW.sub("\r", text))
    if "\r" not in text:
        return text
    lines = []
    for line in text.split("\n"):
        if "\r" in line:
            line = next((part for part in reversed(line.split("\r")) if part), "")
        lines.append(line)
    return "\n".join(lines)


@dataclass
class RawOutput:
    stdout: bytes
    stderr: bytes
    exit_code: int | None
    timed_out: bool
    truncated: bool
    duration_ms: int

    @property
    def produced(self) -> int:
        return len(self.stdout) + len(self.stderr)

    def text(self) -> str:
        """Redacted stdout, then stderr under a marker, as a terminal shows them
        (``terminal_text``)."""
        out = self.stdout.decode("utf-8", errors="replace")
        err = self.stderr.decode("utf-8", errors="replace")
        if self.truncated:  # the cap may have cut a secret in two: drop the cut word
            out, err = drop_cut_tail(out), drop_cut_tail(err)
        out, err = terminal_text(out), terminal_text(err)
        parts = [out.rstrip("\n")] if out.strip() else []
        if err.strip():
            parts.append("[stderr]\n" + err.rstrip("\n"))
        if self.timed_out:
            parts.append("[ctxmode: timed out; the process group was killed]")
        if self.truncated:
            parts.append(f"[ctxmode: output cut at {MAX_OUTPUT_BYTES} bytes; process killed]")
        if self.memory_capped:
            parts.append(
                f"[ctxmode: the run ran out of memory; runs are capped at "
                f"{MAX_MEMORY_BYTES // 1024**2} MB of data memory]"
            )
        return redact("\n".join(parts))

    @property
    def memory_capped(self) -> bool:
        """Did the run fail for lack of memory (an allocation refused under the cap)?"""
        if self.exit_code in (0, None):
            return False
        tail = self.stderr[-4096:].decode("utf-8", errors="replace")
        return bool(_OUT_OF_MEMORY.search(tail))


@dataclass(frozen=True)
class CodeRun:
    """A finished process run, before its output is indexed or returned."""

    language: str
    raw: RawOutput


def _kill_group(pgid: int, proc: subprocess.Popen[bytes] | None = None) -> None:
    """SIGTERM the group, then SIGKILL whatever is left after a short grace."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGTERM)
    deadline = time.monotonic() + KILL_GRACE_S
    while time.monotonic() < deadline:
        if proc is not None:
            proc.poll()  # reap the leader: a zombie still counts as a group member
        try:
            os.killpg(pgid, 0)
        except (ProcessLookupError, PermissionError):
            return
        time.sleep(0.02)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _run(
    argv: Sequence[str],
    cwd: Path,
    timeout: float,
    *,
    stdin: IO[bytes] | None = None,
    env: dict[str, str] | None = None,
    max_bytes: int | None = None,
) -> RawOutput:
    cap = MAX_OUTPUT_BYTES if max_bytes is None else max_bytes
    started = time.monotonic()
    proc = subprocess.Popen(
        _reaped(argv),
        cwd=cwd,
        stdin=stdin if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        env=env,
    )
    pgid = proc.pid  # a new session's leader id is its group id
    buffers = {"out": bytearray(), "err": bytearray()}
    lock = threading.Lock()
    over_cap = threading.Event()

    def reader(name: str, stream: IO[bytes]) -> None:
        while True:
            block = stream.read1(65536) if hasattr(stream, "read1") else stream.read(65536)
            if not block:
                return
            with lock:
                room = cap - len(buffers["out"]) - len(buffers["err"])
                buffers[name].extend(block[: max(0, room)])
                if len(block) > room:
                    over_cap.set()
            if over_cap.is_set():
                _kill_group(pgid)
                return

    assert proc.stdout is not None and proc.stderr is not None
    threads = [
        threading.Thread(target=reader, args=("out", proc.stdout), daemon=True),
        threading.Thread(target=reader, args=("err", proc.stderr), daemon=True),
    ]
    for t in threads:
        t.start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
    # Whether it finished, timed out or was cut: nothing it started may outlive the call.
    _kill_group(pgid, proc)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)
    for t in threads:
        t.join(timeout=2)
    for stream in (proc.stdout, proc.stderr):
        with contextlib.suppress(OSError):
            stream.close()
    truncated = over_cap.is_set()
    exit_code = proc.returncode if not (timed_out or truncated) else None
    return RawOutput(
        bytes(buffers["out"]),
        bytes(buffers["err"]),
        exit_code,
        timed_out,
        truncated,
        int((time.monotonic() - started) * 1000),
    )


def resolve_language(language: str) -> tuple[str, str, list[str]]:
    """(canonical name, file extension, interpreter argv) for a language on this machine."""
    if not isinstance(language, str) or not language.strip():
        raise InvalidInput("language must be a non-empty string such as shell or python")
    name = _ALIASES.get(language.strip().lower(), language.strip().lower())
    if name not in _LANGUAGES:
        raise InvalidInput(
            f"unknown language {language!r}; use one of: {', '.join(available_languages())}"
        )
    ext, candidates = _LANGUAGES[name]
    for candidate in candidates:
        if candidate[0] == "{py}":
            return name, ext, [sys.executable, *candidate[1:]]
        found = shutil.which(candidate[0])
        if found:
            return name, ext, [found, *candidate[1:]]
    wanted = " or ".join(c[0] for c in candidates)
    raise InvalidInput(
        f"language {name!r} needs {wanted} on PATH, which is not installed here; install it "
        f"or use one of: {', '.join(available_languages())}"
    )


def available_languages() -> list[str]:
    """Languages whose interpreter is available on this machine."""
    out = []
    for name, (_ext, candidates) in _LANGUAGES.items():
        if any(c[0] == "{py}" or shutil.which(c[0]) for c in candidates):
            out.append(name)
    return out


def check_timeout(timeout: float | None) -> float:
    if timeout is None:
        return DEFAULT_TIMEOUT_S
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not math.isfinite(timeout)
        or timeout <= 0
    ):
        raise InvalidInput(f"timeout must be a positive number of seconds, got {timeout!r}")
    if timeout > MAX_TIMEOUT_S:
        raise InvalidInput(f"timeout {timeout} s is over the {MAX_TIMEOUT_S:.0f} s limit")
    return float(timeout)


def check_code(code: object) -> str:
    if not isinstance(code, str) or not code.strip():
        raise InvalidInput("code must be a non-empty string")
    if len(code) > MAX_CODE_CHARS:
        raise InvalidInput(f"code is over {MAX_CODE_CHARS} characters; write it to a file")
    return code


def run_source(
    root: Path,
    language: str,
    code: str,
    timeout: float,
    *,
    stdin: IO[bytes] | None = None,
    extra_env: dict[str, str] | None = None,
) -> tuple[str, RawOutput]:
    name, ext, argv = resolve_language(language)
    with tempfile.TemporaryDirectory(prefix="ctxmode-exec-") as tmp:
        script = Path(tmp) / f"main{ext}"
        script.write_text(code, encoding="utf-8")
        # The child inherits the caller's environment (PATH, tool settings); ctxmode reads
        # nothing from it.
        env = {**os.environ, **extra_env} if extra_env else None
        raw = _run([*argv, str(script)], root, timeout, stdin=stdin, env=env)
    return name, raw


__all__ = [
    "CodeRun",
    "RawOutput",
    "available_languages",
    "check_code",
    "check_timeout",
    "resolve_language",
    "run_source",
    "terminal_text",
]
