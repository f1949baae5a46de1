"""``ctxmode serve``: the MCP session over stdio, answered from the registry (standard library).

An agent waits for ``initialize`` and ``tools/list`` before its first model request, and
importing the ``mcp`` SDK (pydantic models of the whole protocol, its HTTP stack) takes about a
second of CPU. So the server is this module, with no SDK: it answers ``initialize`` (version
negotiation), ``ping`` and the lists from ``mcp.registry``; it runs tool calls, resource reads
and the prompt through ``mcp.calls`` (argument checks that say what to send, the bodies of
``mcp.tools``), each call in its own thread so the next line is read meanwhile. Anything else
gets the JSON-RPC error it deserves: a line that is not JSON (or nests too deep to parse) a
parse error, a message that is not a request (no ``jsonrpc: "2.0"``, an id that is not a
string or an integer) an invalid-request error, a method the server does not offer "method
not found", bad ``params`` invalid-params; a notification gets nothing. The SDK's own server
(``mcp.sdk``, built from the same registry) is the oracle the tests compare replies with.

``record_hook`` (not listed) is Claude Code's in-agent hook call (``hooks.in_agent``); it
records into this server's own project only.

Invariants: standard library only until a tool body runs; one JSON-RPC message per line on
the wire, written under one lock; fd 0 and 1 point at ``/dev/null`` and stderr while serving,
so a child process or a stray print cannot corrupt the wire; the process exits when stdin
closes, on SIGINT/SIGTERM, or when its parent goes away, after the calls still running
(within a grace period) and the store are closed.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path

from ctxmode.core import config
from ctxmode.core.errors import CtxmodeError
from ctxmode.mcp import calls, registry

TYPE_CHECKING = False  # mypy reads it as true; ``typing`` is not imported here at run time
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import IO, Any

#: How often the server checks whether its parent process is still there, in seconds.
PARENT_POLL_S = 1.0
#: After stdin closes or the parent goes, how long running calls may take to finish.
ORPHAN_EXIT_GRACE_S = 2.0
#: On SIGINT/SIGTERM, how long running calls may take to finish, in seconds.
SIGNAL_EXIT_GRACE_S = 0.3
#: The tool Claude Code's ``mcp_tool`` hooks call (``hooks.in_agent``). Not listed: the model
#: never sees it, and Claude Code calls a hook's tool whether listed or not (2.1.332).
RECORD_TOOL = "record_hook"
#: The tool bodies load ahead once the client has sent nothing for this long (s): a model
#: turn, a long command. Sooner, their imports would take a core (and the GIL) from the hook
#: calls and the agent's own start before its first model request.
WARM_QUIET_S = 0.5

#: JSON-RPC error codes.
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602


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
        self._lists: dict[str, dict[str, Any]] | None = None
        self._initialized = False
        #: The one ``StoreRunner`` of every call, opened on the first.
        self._runner: Any = None
        self._runner_lock = threading.Lock()
        #: Threads of calls still running (``close`` waits for them).
        self._calls: set[threading.Thread] = set()
        #: Loads the hook path and the tool bodies after the handshake (``_warm_later``).
        self._warm: threading.Thread | None = None
        #: When the last line came from the client (``time.monotonic``).
        self._last_line = time.monotonic()
        #: Hook payload folders by whether they belong to this server's project.
        self._own: dict[str, bool] = {}

    # -- the wire ----------------------------------------------------------------------------

    def send(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":"))
        # A lone surrogate must not end the loop.
        raw = data.encode("utf-8", "replace") + b"\n"
        with self._out_lock:
            self._out.write(raw)
            self._out.flush()

    def _reply(self, rid: Any, result: dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "id": rid, "result": result})

    def _error(self, rid: Any, code: int, message: str, data: Any = None) -> None:
        error: dict[str, Any] = {"code": code, "message": message}
        if data is not None:
            error["data"] = data
        self.send({"jsonrpc": "2.0", "id": rid, "error": error})

    # -- dispatch ----------------------------------------------------------------------------

    def handle(self, line: str) -> None:
        """One line from the client: a request gets exactly one reply, in order of work."""
        self._last_line = time.monotonic()
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):  # RecursionError: nesting the parser refuses
            self._error(None, PARSE_ERROR, "Parse error", "send one JSON-RPC message per line")
            return
        if not isinstance(msg, dict) or msg.get("jsonrpc") != "2.0":
            self._error(
                None, INVALID_REQUEST, "Invalid Request", 'send a JSON object with "jsonrpc": "2.0"'
            )
            return
        method, rid = msg.get("method"), msg.get("id")
        if method is None and ("result" in msg or "error" in msg):
            return  # a reply to a request of ours: the server sends none
        valid_id = isinstance(rid, str | int) and not isinstance(rid, bool)
        if "id" in msg and not valid_id:
            self._error(
                None, INVALID_REQUEST, "Invalid Request", "the id must be a string or an integer"
            )
            return
        if not isinstance(method, str):
            self._error(
                rid, INVALID_REQUEST, "Invalid Request", "a request needs a method (string)"
            )
            return
        if "id" not in msg:
            return  # a notification: ``initialized``, ``cancelled`` ... need no answer
        params = msg.get("params")
        if params is not None and not isinstance(params, dict):
            self._error(
                rid, INVALID_PARAMS, "Invalid request parameters", "params must be an object"
            )
            return
        self._dispatch(rid, method, params or {})

    def _dispatch(self, rid: Any, method: str, params: dict[str, Any]) -> None:
        run = {
            "tools/call": self._call_tool,
            "resources/read": self._read_resource,
            "prompts/get": self._get_prompt,
        }.get(method)
        if method == "initialize":
            self._initialize(rid, params)
        elif method == "ping":
            self._reply(rid, {})
        elif run is None and method not in self._listings():
            # ``server/discover`` too: Claude Code (2.1.332) probes for the stateless 2026 era
            # first and, on "method not found", opens with ``initialize`` at once.
            self._error(rid, METHOD_NOT_FOUND, "Method not found", method)
        elif not self._initialized:
            self._error(rid, INVALID_REQUEST, "Invalid Request", "send initialize first")
        elif run is not None:
            run(rid, params)
        else:
            self._reply(rid, self._listings()[method])
            if method == "tools/list" and self._warm_after_handshake:
                self._warm_later()

    def _initialize(self, rid: Any, params: dict[str, Any]) -> None:
        info = params.get("clientInfo")
        if not (
            isinstance(params.get("protocolVersion"), str)
            and isinstance(params.get("capabilities"), dict)
            and isinstance(info, dict)
            and isinstance(info.get("name"), str)
        ):
            self._error(
                rid,
                INVALID_PARAMS,
                "Invalid request parameters",
                "initialize takes protocolVersion (string), capabilities (object) and "
                "clientInfo (object with name and version)",
            )
            return
        self._initialized = True
        self._reply(rid, registry.initialize_result(params["protocolVersion"]))

    def _listings(self) -> dict[str, dict[str, Any]]:
        if self._lists is None:
            self._lists = registry.lists()
        return self._lists

    def _call_tool(self, rid: Any, params: dict[str, Any]) -> None:
        name, given = params.get("name"), params.get("arguments")
        if not isinstance(name, str) or not isinstance(given, dict | None):
            why = "tools/call takes name (string) and arguments (object)"
            self._error(rid, INVALID_PARAMS, "Invalid request parameters", why)
            return
        if name == RECORD_TOOL and self._record is not None:
            self._reply(rid, {"content": [{"type": "text", "text": self._record_hook(given)}]})
            return
        tool = registry.TOOL.get(name)
        if tool is None:
            known = ", ".join(registry.TOOL)
            self._reply(rid, calls.error_result(f"Unknown tool: {name}. Tools: {known}"))
            return
        self._spawn(lambda: self._reply(rid, calls.call_tool(self._store(), tool, given)))

    def _record_hook(self, arguments: Any) -> str:
        """Record an in-agent hook call, if it is about this server's project; else drop it
        (a payload naming another folder must not write into that folder's store)."""
        assert self._record is not None
        payload = arguments.get("payload") if isinstance(arguments, dict) else None
        cwd = payload.get("cwd") if isinstance(payload, dict) else None
        if isinstance(cwd, str) and cwd and not self._own_folder(cwd):
            print(f"ctxmode serve: record_hook for {cwd[:200]!r} dropped: not this server's "
                  f"project ({self._project()})", file=sys.stderr)  # fmt: skip
            return ""
        return self._record(arguments, os.getcwd())

    def _project(self) -> str:
        return str(self.root) if self.root is not None else config.find_root(os.getcwd())

    def _own_folder(self, folder: str) -> bool:
        """Whether hook calls from ``folder`` belong to this server's project (same root)."""
        own = self._own.get(folder)
        if own is None:
            try:
                own = os.path.realpath(config.find_root(folder)) == os.path.realpath(
                    self._project()
                )
            except (OSError, ValueError, CtxmodeError):
                own = False
            self._own[folder] = own
        return own

    def _read_resource(self, rid: Any, params: dict[str, Any]) -> None:
        uri = params.get("uri")
        resource = registry.RESOURCE.get(uri) if isinstance(uri, str) else None
        if resource is None:
            known = ", ".join(registry.RESOURCE)
            self._error(
                rid, INVALID_PARAMS, f"Unknown resource: {uri}. Resources: {known}", {"uri": uri}
            )
            return

        def read() -> None:
            try:
                result = calls.read_resource(self._store(), resource)
            except CtxmodeError as exc:
                self._error(rid, INVALID_PARAMS, str(exc), {"uri": uri})
                return
            except Exception as exc:  # noqa: BLE001 - the client still gets its answer
                print(f"ctxmode serve: reading {uri} failed: {exc!r}", file=sys.stderr)
                self._error(rid, -32603, f"Error reading resource {uri}")
                return
            self._reply(rid, result)

        self._spawn(read)

    def _get_prompt(self, rid: Any, params: dict[str, Any]) -> None:
        name = params.get("name")
        prompt = registry.PROMPT.get(name) if isinstance(name, str) else None
        if prompt is None:
            known = ", ".join(registry.PROMPT)
            self._error(rid, INVALID_PARAMS, f"Unknown prompt: {name}. Prompts: {known}")
            return
        try:
            result = calls.get_prompt(prompt, params.get("arguments"))
        except calls.ArgumentError as exc:
            self._error(rid, INVALID_PARAMS, str(exc))
            return
        self._reply(rid, result)

    def _spawn(self, work: Callable[[], None]) -> None:
        """Run a call in its own thread, so the next line is read meanwhile."""

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

    def _warm_later(self) -> None:
        """After the handshake, load in the background (once) what the next calls need: the
        in-agent hook path at once (the agent's next hook call, UserPromptSubmit, comes before
        its first model request), the tool bodies once the client pauses (``WARM_QUIET_S``),
        so the model's first ctxmode tool call pays none of their imports."""
        if self._warm is None:
            self._warm = threading.Thread(target=self._load_ahead, name="ctxmode-warm", daemon=True)
            self._warm.start()

    def _load_ahead(self) -> None:
        if self._prepare is not None:
            try:
                self._prepare()
            except Exception as exc:  # noqa: BLE001 - the first hook call does it instead
                print(f"ctxmode serve: hook warm-up failed: {exc!r}", file=sys.stderr)
        while (quiet := time.monotonic() - self._last_line) < WARM_QUIET_S:
            time.sleep(WARM_QUIET_S - quiet)
        try:
            calls.load_all()
        except Exception as exc:  # noqa: BLE001 - the first call loads it instead
            print(f"ctxmode serve: warm-up failed: {exc!r}", file=sys.stderr)

    @property
    def warming(self) -> bool:
        """Whether the warm-up thread (``_warm_later``) is still loading."""
        return self._warm is not None and self._warm.is_alive()

    def close(self, timeout: float = ORPHAN_EXIT_GRACE_S) -> None:
        """Let running calls finish, at most ``timeout`` in all; then close the store unless
        a call still runs."""
        deadline = time.monotonic() + timeout
        for thread in list(self._calls):
            thread.join(max(0.0, deadline - time.monotonic()))
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

    ``record``: runs in-agent hook calls (``record_hook``); without it the tool is unknown.
    ``prepare``: loads what ``record`` needs, ahead.
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
        # A daemon thread still importing the bodies makes interpreter teardown fragile.
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
