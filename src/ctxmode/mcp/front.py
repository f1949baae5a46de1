"""``ctxmode serve``'s stdio front: the MCP session without the SDK, as far as it can go.

An agent waits for ``initialize`` and ``tools/list`` before its first model request, and
importing the ``mcp`` SDK (pydantic models of the whole protocol, its client, its HTTP stack)
takes about a second of CPU, paid again at the model's first ctxmode tool call. The front
answers from ``listing.json``, the SDK server's own recorded replies (``mcp.listing``):
``initialize`` (the same version negotiation), ``ping`` and the tool, resource, template and
prompt lists; it runs tool calls whose arguments the SDK would take as they are, resource
reads and the prompt through ``mcp.native`` (the bodies of ``mcp.tools``, the replies the SDK
would send), each call in its own thread. The first message it cannot answer (arguments to
coerce or reject, an unknown method or tool, a malformed line) starts the SDK server
(``mcp.sdk``) in a thread, on the same store, replays the client's handshake into it (its
reply to the replayed ``initialize`` is dropped) and from then on forwards that and every
later message the front does not run itself, so coercions and argument errors are the SDK
server's own. A line on stderr says when, and why, the SDK server starts.

Invariants: standard library only until a tool body runs; one JSON-RPC message per line on
the wire, written under one lock; fd 0 and 1 point at ``/dev/null`` and stderr while serving
(as in the SDK's transport), so a child process or a stray print cannot corrupt the wire; the
process exits when stdin closes, on SIGINT/SIGTERM, or when its parent goes away, after the
calls still running (within a grace period) and the store are closed.
"""

from __future__ import annotations

import json
import os
import queue
import sys
import threading
import time
from pathlib import Path

from ctxmode.core import config
from ctxmode.core.errors import CtxmodeError
from ctxmode.mcp import listing

TYPE_CHECKING = False  # mypy reads it as true; ``typing`` is not imported at run time
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import IO, Any

#: How often the server checks whether its parent process is still there, in seconds.
PARENT_POLL_S = 1.0
#: After stdin closes or the parent goes, how long the SDK server may take to close the store.
ORPHAN_EXIT_GRACE_S = 2.0
#: On SIGINT/SIGTERM, how long the SDK server may take to close the store, in seconds.
SIGNAL_EXIT_GRACE_S = 0.3
#: The tool Claude Code's ``mcp_tool`` hooks call (``hooks.in_agent``). Not listed: the model
#: never sees it, and Claude Code calls a hook's tool whether listed or not (2.1.332).
RECORD_TOOL = "record_hook"
#: The stateless-era (2026-07-28) discovery request; the front serves the handshake era only.
DISCOVER = "server/discover"
#: The tool bodies load ahead once the client has sent nothing for this long (s): a model
#: turn, a long command. Sooner, their imports would take a core (and the GIL) from the hook
#: calls and the agent's own start before its first model request.
WARM_QUIET_S = 0.5
#: Id of the ``initialize`` replayed into the SDK server; its reply is not sent on.
REPLAY_ID = "ctxmode-front-initialize"


def _valid_initialize(params: Any) -> bool:
    """Whether ``initialize`` params have the shape the SDK accepts (else it answers)."""
    if not isinstance(params, dict):
        return False
    info = params.get("clientInfo")
    return (
        isinstance(params.get("protocolVersion"), str)
        and isinstance(params.get("capabilities"), dict)
        and isinstance(info, dict)
        and isinstance(info.get("name"), str)
        and isinstance(info.get("version"), str)
    )


class Front:
    """One client session over a pair of binary pipes."""

    def __init__(
        self,
        db_path: Path,
        root: Path | None,
        wire_out: IO[bytes],
        record: Callable[[Any, str], str] | None = None,
        warm: bool = True,
        prepare: Callable[[], None] | None = None,
    ) -> None:
        self.db_path = db_path
        self._warm_after_handshake = warm
        #: Records one in-agent hook call (``hooks.in_agent.record``); given by the entry point,
        #: since one face does not import another. ``prepare`` loads what it needs ahead.
        self._record = record
        self._prepare = prepare
        self.root = root
        self._out = wire_out
        self._out_lock = threading.Lock()
        self._listing: dict[str, Any] | None = None
        #: Listed tools, resources and prompts by name (or URI), from ``listing.json``.
        self._listed: dict[str, dict[str, dict[str, Any]]] | None = None
        self._initialized = False
        self._replay: list[str] = []
        self._sdk: queue.Queue[str | None] | None = None
        self._sdk_thread: threading.Thread | None = None
        self._swallow = False
        #: ``_start_sdk`` runs once, from the reading loop or from a call's thread.
        self._sdk_lock = threading.Lock()
        #: The one ``StoreRunner`` of native calls and, once it starts, the SDK server.
        self._runner: Any = None
        self._runner_lock = threading.Lock()
        #: Threads of native calls still running (``close`` waits for them).
        self._calls: set[threading.Thread] = set()
        #: Loads the hook path and the tool bodies after the handshake (``_warm_later``).
        self._warm: threading.Thread | None = None
        #: When the last line came from the client (``time.monotonic``).
        self._last_line = time.monotonic()

    # -- the wire ----------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        self._write(json.dumps(message, ensure_ascii=False, separators=(",", ":")))

    def _reply(self, rid: Any, result: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "result": result})

    def _write(self, line: str) -> None:
        data = line.encode("utf-8", "replace") + b"\n"  # a lone surrogate must not end the loop
        with self._out_lock:
            self._out.write(data)
            self._out.flush()

    def _from_sdk(self, line: str) -> None:
        """A line the SDK server sends: on to the client, but for the replayed handshake."""
        if self._swallow and REPLAY_ID in line:
            reply = json.loads(line)
            if reply.get("id") == REPLAY_ID:
                self._swallow = False
                if "error" in reply:
                    print(f"ctxmode serve: replayed initialize failed: {line}", file=sys.stderr)
                return
        self._write(line)

    # -- dispatch ----------------------------------------------------------------------------

    def handle(self, line: str) -> None:
        """One line from the client."""
        self._last_line = time.monotonic()
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: nesting the parser refuses
            msg = None
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            self._forward(line, "a message that is not JSON-RPC 2.0")
            return
        if self._record is not None and self._record_call(msg):
            return
        if self._sdk is None and self._answer(msg, line):  # lists: the SDK's, once it runs
            return
        if self._initialized and self._run_native(msg, line):
            return
        self._forward(line, str(msg.get("method")))

    @staticmethod
    def _request(msg: dict[str, Any], *keys: str) -> tuple[Any, dict[str, Any]] | None:
        """(id, params) of a request whose params hold no more than ``keys`` and ``_meta``."""
        rid, params = msg.get("id"), msg.get("params")
        if not isinstance(rid, str | int) or isinstance(rid, bool):
            return None
        if params is None:
            params = {}
        if not isinstance(params, dict) or set(params) - {*keys, "_meta"}:
            return None
        return rid, params

    def _record_call(self, msg: dict[str, Any]) -> bool:
        """Run a ``record_hook`` tool call here, with the hook path (no SDK); else ``False``."""
        rid, params = msg.get("id"), msg.get("params")
        if (
            msg.get("method") != "tools/call"
            or not isinstance(params, dict)
            or params.get("name") != RECORD_TOOL
            or not isinstance(rid, str | int)
            or isinstance(rid, bool)
        ):
            return False
        assert self._record is not None
        text = self._record(params.get("arguments"), os.getcwd())
        self._reply(rid, {"content": [{"type": "text", "text": text}]})
        return True

    def _answer(self, msg: dict[str, Any], line: str) -> bool:
        """Answer a handshake or listing message exactly as the SDK would; else ``False``."""
        method, rid, params = msg.get("method"), msg.get("id"), msg.get("params")
        if not isinstance(method, str) or isinstance(rid, bool | float | list | dict):
            return False
        if rid is None:  # a notification: ``initialized`` is replayed into the SDK server
            if "id" in msg:
                return False
            if method == "notifications/initialized":
                self._replay.append(line)
            return True
        if method == DISCOVER and not self._initialized:
            # Claude Code (2.1.332) probes for the stateless 2026 era first and, on "method not
            # found", opens with ``initialize`` at once, as with any handshake-era server. The
            # SDK server would answer the probe, but only once it has loaded.
            error = {"code": -32601, "message": "Method not found", "data": method}
            self.send({"jsonrpc": "2.0", "id": rid, "error": error})
            return True
        if method == "initialize":
            if self._initialized or not _valid_initialize(params):
                return False
            data = self._load()
            assert isinstance(params, dict)
            wanted = params["protocolVersion"]
            version = wanted if wanted in data["handshake_versions"] else data["latest_handshake"]
            self._initialized = True
            self._replay.insert(0, json.dumps({**msg, "id": REPLAY_ID}))
            self._reply(rid, data["initialize"][version])
            return True
        if not self._initialized or (
            params is not None and (not isinstance(params, dict) or set(params) - {"_meta"})
        ):
            return False
        results = self._load()["results"]
        if method not in results:
            return False
        self._reply(rid, results[method])
        if method == "tools/list" and self._warm_after_handshake:
            self._warm_later()
        return True

    def _run_native(self, msg: dict[str, Any], line: str) -> bool:
        """Run a tool call, resource read or prompt ``native`` can take; else ``False``."""
        method = msg.get("method")
        if method == "tools/call":
            return self._call_tool(msg)
        if method == "resources/read":
            return self._read_resource(msg, line)
        if method == "prompts/get":
            return self._get_prompt(msg)
        return False

    def _named(
        self, msg: dict[str, Any], kind: str, key: str, *keys: str
    ) -> tuple[Any, dict[str, Any], dict[str, Any]] | None:
        """(id, params, listed entry) of a request naming by ``key`` an item listed under
        ``kind``, whose params hold no more than ``key``, ``keys`` and ``_meta``."""
        request = self._request(msg, key, *keys)
        if request is None:
            return None
        rid, params = request
        name = params.get(key)
        entry = self._listed_items()[kind].get(name) if isinstance(name, str) else None
        return None if entry is None else (rid, params, entry)

    def _call_tool(self, msg: dict[str, Any]) -> bool:
        from ctxmode.mcp import native, tools

        found = self._named(msg, "tools", "name", "arguments")
        target = tools.TOOLS.get(found[2]["name"]) if found else None
        if found is None or target is None:
            return False
        rid, params, tool = found
        args = native.arguments(tool["inputSchema"], params.get("arguments"))
        if args is None:
            return False
        body, name = target, tool["name"]
        self._spawn(lambda: self._reply(rid, native.call_tool(self._store(), name, body, args)))
        return True

    def _read_resource(self, msg: dict[str, Any], line: str) -> bool:
        from ctxmode.mcp import native, tools

        found = self._named(msg, "resources", "uri")
        target = tools.RESOURCES.get(found[2]["uri"]) if found else None
        if found is None or target is None:
            return False
        rid, _params, resource = found
        body = target

        def read() -> None:
            try:
                result = native.read_resource(self._store(), resource, body)
            except Exception:  # noqa: BLE001 - read-only: the SDK server reads it again
                self._forward(line, f"resources/read of {resource['uri']} failed")
                return
            self._reply(rid, result)

        self._spawn(read)
        return True

    def _get_prompt(self, msg: dict[str, Any]) -> bool:
        from ctxmode.mcp import native, tools

        found = self._named(msg, "prompts", "name", "arguments")
        if found is None or found[2]["name"] != tools.DECISION_PROMPT:
            return False
        rid, params, prompt = found
        result = native.get_prompt(prompt, params.get("arguments"))
        if result is None:
            return False
        self._reply(rid, result)
        return True

    def _spawn(self, work: Callable[[], None]) -> None:
        """Run a native call in its own thread, so the next line is read meanwhile."""

        def run() -> None:
            try:
                work()
            finally:
                self._calls.discard(thread)

        thread = threading.Thread(target=run, name="ctxmode-call", daemon=True)
        self._calls.add(thread)
        thread.start()

    def _store(self) -> Any:
        """The one ``StoreRunner`` (opened on its first call)."""
        with self._runner_lock:
            if self._runner is None:
                from ctxmode.mcp.tools.common import StoreRunner

                self._runner = StoreRunner(self.db_path, self.root)
            return self._runner

    def _listed_items(self) -> dict[str, dict[str, dict[str, Any]]]:
        if self._listed is None:
            results = self._load()["results"]
            self._listed = {
                "tools": {t["name"]: t for t in results["tools/list"]["tools"]},
                "resources": {r["uri"]: r for r in results["resources/list"]["resources"]},
                "prompts": {p["name"]: p for p in results["prompts/list"]["prompts"]},
            }
        return self._listed

    def _warm_later(self) -> None:
        """After the handshake, load in the background (once) what the next calls need: the
        in-agent hook path at once (the agent's next hook call, UserPromptSubmit, comes before
        its first model request), the tool bodies once the client pauses (``WARM_QUIET_S``),
        so the model's first ctxmode tool call pays none of their imports."""
        if self._warm is None:
            self._warm = threading.Thread(target=self._load_ahead, name="ctxmode-warm", daemon=True)
            self._warm.start()

    def _load_ahead(self) -> None:
        from ctxmode.mcp import tools

        if self._prepare is not None:
            try:
                self._prepare()
            except Exception as exc:  # noqa: BLE001 - the first hook call does it instead
                print(f"ctxmode serve: hook warm-up failed: {exc!r}", file=sys.stderr)
        while (quiet := time.monotonic() - self._last_line) < WARM_QUIET_S:
            time.sleep(WARM_QUIET_S - quiet)
        try:
            tools.load_all()
        except Exception as exc:  # noqa: BLE001 - the first call loads it instead
            print(f"ctxmode serve: warm-up failed: {exc!r}", file=sys.stderr)

    def _load(self) -> dict[str, Any]:
        if self._listing is None:
            self._listing = listing.load()
        return self._listing

    def _forward(self, line: str, why: str) -> None:
        self._ensure_sdk(why)
        assert self._sdk is not None
        self._sdk.put(line)

    def _ensure_sdk(self, why: str) -> None:
        with self._sdk_lock:
            if self._sdk is None:
                print(f"ctxmode serve: starting the SDK server for {why[:100]}", file=sys.stderr)
                self._start_sdk()

    def _start_sdk(self) -> None:
        """Start the SDK server and replay the handshake the front answered."""
        feed: queue.Queue[str | None] = queue.Queue()
        for line in self._replay:
            feed.put(line)
        self._swallow = bool(self._replay) and self._initialized
        self._replay = []
        self._sdk = feed
        self._sdk_thread = threading.Thread(
            target=self._run_sdk, args=(feed,), name="ctxmode-mcp", daemon=True
        )
        self._sdk_thread.start()

    def _run_sdk(self, feed: queue.Queue[str | None]) -> None:
        import anyio

        from ctxmode.mcp.sdk.bridge import serve_lines
        from ctxmode.mcp.sdk.server import build_server

        try:
            server = build_server(self.db_path, self.root, runner=self._store())
            anyio.run(serve_lines, server, feed, self._from_sdk)
        except BaseException as exc:  # the client would wait forever for its replies
            print(f"ctxmode serve: the MCP server stopped: {exc!r}", file=sys.stderr)
            sys.stderr.flush()
            os._exit(1)

    @property
    def warming(self) -> bool:
        """Whether the warm-up thread (``_warm_later``) is still loading."""
        return self._warm is not None and self._warm.is_alive()

    def close(self, timeout: float = ORPHAN_EXIT_GRACE_S) -> None:
        """Let running calls finish and end the SDK session, at most ``timeout`` in all; then
        close the store unless a call still runs."""
        deadline = time.monotonic() + timeout
        for thread in list(self._calls):
            thread.join(max(0.0, deadline - time.monotonic()))
        if self._sdk is not None and self._sdk_thread is not None:
            self._sdk.put(None)
            self._sdk_thread.join(max(0.0, deadline - time.monotonic()))
        if self._runner is not None and not self._calls:
            self._runner.close()


def _claim_stdio() -> tuple[IO[bytes], IO[bytes]]:
    """The wire as private duplicates of fd 0 and 1; fd 0 -> /dev/null, fd 1 -> stderr."""
    wire_in = os.fdopen(os.dup(0), "rb", closefd=True)
    wire_out = os.fdopen(os.dup(1), "wb", closefd=True)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    return wire_in, wire_out


def _watch_parent(front: Front, parent_pid: int) -> None:
    import time

    while os.getppid() == parent_pid:
        time.sleep(PARENT_POLL_S)
    print("ctxmode serve: parent process gone; exiting", file=sys.stderr)
    # A stdin inherited by another process never reaches EOF: close what runs, then exit hard.
    front.close()
    os._exit(0)


def _exit_on_signals(front: Front) -> None:
    """SIGINT/SIGTERM (how agents stop their servers): end the session quickly, then exit.

    Without this the interpreter's teardown can outlast the agent's grace period (Claude Code
    escalates to SIGKILL after a few hundred milliseconds).
    """
    import signal

    def stop(signum: int, _frame: object) -> None:
        front.close(SIGNAL_EXIT_GRACE_S)
        sys.stderr.flush()
        os._exit(0)

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, stop)


def serve(
    db_path: str | os.PathLike[str],
    root: str | os.PathLike[str] | None = None,
    *,
    parent_pid: int | None = None,
    record: Callable[[Any, str], str] | None = None,
    prepare: Callable[[], None] | None = None,
) -> None:
    """Run the server over stdio until stdin closes or ``parent_pid`` (default: ours) exits.

    ``record``: runs in-agent hook calls (``record_hook``); without it they go to the SDK
    server, which does not know the tool. ``prepare``: loads what ``record`` needs, ahead.
    """
    parent = parent_pid if parent_pid is not None else os.getppid()
    wire_in, wire_out = _claim_stdio()
    db = Path(db_path).expanduser().absolute()
    front = Front(db, Path(root) if root else None, wire_out, record, prepare=prepare)
    threading.Thread(target=_watch_parent, args=(front, parent), daemon=True).start()
    _exit_on_signals(front)
    try:
        for raw in wire_in:
            line = raw.decode("utf-8", "replace").strip()
            if line:
                front.handle(line)
    except BrokenPipeError:  # the client stopped reading: nobody is left to answer
        pass
    front.close()
    if front.warming:
        # A daemon thread still importing the SDK makes interpreter teardown fragile.
        sys.stderr.flush()
        os._exit(0)


def resolve_serve_paths(explicit_db: str | None) -> tuple[Path, Path]:
    """Store file and project root: ``--db``, ``$CTXMODE_DB``, ``$CLAUDE_PROJECT_DIR``, cwd."""
    start = config.claude_project_dir()
    db_path = config.resolve_db_path(explicit_db, cwd=start)
    if db_path.parent.name == config.CONTEXT_DIR:
        return db_path, db_path.parent.parent
    return db_path, config.find_project_root(start)


USAGE = "usage: ctxmode serve [--db PATH]"


def main(
    argv: list[str],
    parent_pid: int | None = None,
    record: Callable[[Any, str], str] | None = None,
    prepare: Callable[[], None] | None = None,
) -> int:
    """``ctxmode serve [--db PATH]`` without the click stack (startup time matters here)."""
    db: str | None = None
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg == "--db" and args:
            db = args.pop(0)
        elif arg.startswith("--db="):
            db = arg[len("--db=") :]
        else:
            print(f"Error: unexpected argument {arg!r}; {USAGE}", file=sys.stderr)
            return 1
    try:
        db_path, root = resolve_serve_paths(db)
        serve(db_path, root, parent_pid=parent_pid, record=record, prepare=prepare)
    except CtxmodeError as exc:  # before the server runs: a bad path, a cwd that is gone ...
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    return 0
