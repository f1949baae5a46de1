"""``ctxmode hook EVENT [--agent A]``: read one payload on stdin, record, maybe inject context.

Contract: exit 0 always; stdout holds nothing or exactly one JSON object; problems go to
``<project root>/.context/hooks.log`` (``<UTC time> LEVEL message``, mode 0600). Only the
standard library and ctxmode core modules are imported here (never click, rich, mcp ...),
lazily and after the cheap checks, because this runs on every tool call of the agent.
"""

from __future__ import annotations

import os
import sys

from ctxmode.hooks.hooklog import MAX_LOG_BYTES as MAX_LOG_BYTES
from ctxmode.hooks.hooklog import log as log

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time (see _lean)
if TYPE_CHECKING:
    from typing import Any

    from ctxmode.sessions.vocab import NormalizedHookEvent
    from ctxmode.store import Store

#: Payloads larger than this are dropped unread beyond the limit (bytes).
MAX_PAYLOAD_BYTES = 10 * 1024 * 1024
#: How long a hook waits for another writer per attempt; hooks must not stall the agent (ms).
HOOK_BUSY_TIMEOUT_MS = 500
#: Write-lock attempts in a hook: at most ~1.7 s stalled on a locked store, then fail open.
HOOK_LOCK_RETRIES = 3

USAGE = "usage: ctxmode hook EVENT [--agent AGENT] (AGENT: see `ctxmode agents`)"


HELP = f"""{USAGE}

Run one agent hook: the agent's JSON payload on stdin, the JSON to add to the model's context
(if any) on stdout. Agents call this; `ctxmode install AGENT` sets it up. It always exits 0,
logging problems to .context/hooks.log, so a hook never breaks the agent.

EVENT is the agent's hook name (PreToolUse, AfterTool, ...) or ctxmode's spelling:
pre-tool-use, post-tool-use, post-tool-use-failure, user-prompt-submit, pre-compact,
session-start, stop, session-end, subagent-start, subagent-stop.
"""


def parse_args(argv: list[str]) -> tuple[str | None, str]:
    """(event, agent) from argv; unknown options are ignored so new installers never break."""
    event: str | None = None
    agent = "claude-code"
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--agent" and i + 1 < len(argv):
            agent = argv[i + 1]
            i += 2
            continue
        if arg.startswith("--agent="):
            agent = arg.split("=", 1)[1]
        elif not arg.startswith("-") and event is None:
            event = arg
        i += 1
    return event, agent


def _read_stdin() -> bytes | None:
    """At most ``MAX_PAYLOAD_BYTES``; None when the payload is larger."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        return b""
    data = stream.read(MAX_PAYLOAD_BYTES + 1)
    return None if len(data) > MAX_PAYLOAD_BYTES else data


#: Stores the hook leaves open for ``os._exit`` (see ``main``'s ``keep_store_open``).
_KEPT_OPEN: list[object] = []


def main(argv: list[str], *, keep_store_open: bool = False) -> int:
    """Run one hook call; always returns 0 (fail open).

    ``keep_store_open``: leave the store's connection open after a successful call, for a
    process that ends with ``os._exit`` next: closing SQLite's last connection checkpoints the
    WAL (an fsync) on every tool call, while SQLite checkpoints on its own every 1000 pages.
    """
    root = "."
    try:
        from ctxmode.core import config

        if "--help" in argv or "-h" in argv:
            sys.stdout.write(HELP)
            return 0
        if config.is_disabled():
            return 0
        event, agent = parse_args(argv)
        raw = _read_stdin()
        root = config.find_root()
        if event is None:
            log(root, "WARN", f"no hook event given; {USAGE}")
            return 0
        if raw is None:
            log(root, "WARN", f"{event}: payload over {MAX_PAYLOAD_BYTES} bytes dropped")
            return 0
        payload = parse(event, raw)
        if payload is None:
            return 0
        _, output = run_payload(event, agent, payload, os.getcwd(), keep_open=keep_store_open)
        if output is not None:
            import json

            sys.stdout.write(json.dumps(output, ensure_ascii=False) + "\n")
            sys.stdout.flush()
    except Exception as exc:  # noqa: BLE001 - the hook boundary: fail open, log, exit 0
        log(root, "ERROR", f"{' '.join(argv)[:80]}: {type(exc).__name__}: {exc}")
    return 0


def _replay_spool(store: Store, root: str) -> None:
    """Write the calls spooled while the store was locked (``sessions.spool``); never raises."""
    try:
        from ctxmode.sessions import spool

        written = spool.replay(store)
        if written:
            log(
                root,
                "INFO",
                f"wrote {written} spooled hook call(s) kept while the store was locked",
            )
    except Exception as exc:  # noqa: BLE001 - the spool waits for the next hook
        log(root, "WARN", f"spooled hook calls not written yet: {type(exc).__name__}: {exc}")


def keep(stores: dict[str, tuple[Store, tuple[int, int]]], db_path: str, store: Store) -> None:
    """Keep ``store`` open in ``stores`` for the next calls, known by the file's device and
    inode (``_reused``); a store kept for ``db_path`` already stays, and ``store`` is closed."""
    stat = os.stat(db_path)
    if stores.setdefault(db_path, (store, (stat.st_dev, stat.st_ino)))[0] is not store:
        store.close()


def _reused(stores: dict[str, tuple[Store, tuple[int, int]]] | None, db_path: str) -> Store | None:
    """The open store kept for ``db_path``, if the file there is still the one it opened."""
    if not stores or db_path not in stores:
        return None
    store, ident = stores[db_path]
    try:
        stat = os.stat(db_path)
        same = (stat.st_dev, stat.st_ino) == ident
    except OSError:
        same = False
    if same and not store.conn.in_transaction:
        return store
    del stores[db_path]  # moved aside, replaced or deleted since: open the file there now
    try:  # noqa: SIM105 - contextlib is one more import on the hook path
        store.close()
    except Exception:  # noqa: BLE001 - an old handle's close must not fail the call
        pass
    return None


def parse(event: str, raw: bytes) -> dict[str, Any] | None:
    """The payload of a hook call from stdin's bytes: a JSON object, or None (logged)."""
    import json
    import re

    from ctxmode.core import config

    if not raw.strip():
        return None
    try:
        payload = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # RecursionError: nesting deeper than ~1000
        log(config.find_root(), "WARN", f"{event}: payload is not JSON ({exc})")
        return None
    if not isinstance(payload, dict):
        log(config.find_root(), "WARN", f"{event}: payload is not a JSON object")
        return None
    if b"\\u" in raw and re.search(rb"\\u[dD][89a-fA-F]", raw):
        # A ``\udc80`` escape decodes to a lone surrogate, which SQLite cannot store.
        from ctxmode.core.redact import scrub_surrogates

        payload = scrub_surrogates(payload)
    found: dict[str, Any] = payload
    return found


def run_payload(
    event: str,
    agent: str,
    payload: dict[str, Any],
    process_cwd: str,
    *,
    keep_open: bool = False,
    stores: dict[str, tuple[Store, tuple[int, int]]] | None = None,
) -> tuple[str, dict[str, object] | None]:
    """Record one hook call and decide what to print: ``(project root, output or None)``.

    Normalizes the payload (``sessions.adapters``), finds the project and its store from the
    payload's ``cwd`` (else ``process_cwd``), and dispatches to ``handlers``. A fail-open
    boundary itself: a failure is logged in the project's ``hooks.log`` and gives no output.
    ``stores``: a long-running process's open stores by path (the MCP server running in-agent
    hooks), reused while the file at the path is the same one; ``keep_open``: see ``main``.
    """
    from ctxmode.core import config
    from ctxmode.sessions import adapters

    root = config.find_root(process_cwd)
    try:
        if agent not in adapters.AGENTS:
            log(root, "WARN", f"unknown agent {agent!r}; reading it as claude-code")
            agent = "claude-code"
        ev = adapters.normalize(agent, event, payload)
        if ev is None:
            return root, None
        cwd = ev.cwd if ev.cwd and os.path.isdir(ev.cwd) else process_cwd
        root = config.find_root(cwd)
        if config.load_settings(root).disabled:
            return root, None
        key = None
        if ev.kind not in ("session_start", "pre_compact", "session_end"):
            key = adapters.call_key(ev.kind, payload)
        return root, _handle(event, ev, key, root, config.db_path_for(root), keep_open, stores)
    except Exception as exc:  # noqa: BLE001 - the hook boundary: fail open, log
        log(root, "ERROR", f"{event}: {type(exc).__name__}: {exc}")
        return root, None


def _handle(
    event: str,
    ev: NormalizedHookEvent,
    key: str | None,
    root: str,
    db_path: str,
    keep_open: bool,
    stores: dict[str, tuple[Store, tuple[int, int]]] | None,
) -> dict[str, object] | None:
    """Open (or reuse) the store, run the handler, and close or keep the store. Damage found
    inside the file is repaired (``core.repair.repair``: in place when only the search index or an
    index is hurt, else every readable row copied into a new store, the damaged file kept
    aside) and the call runs once more on it. While a repair has the store (a large one runs
    in the background), the call's records wait in the spool."""
    from ctxmode.core import config
    from ctxmode.core.db import is_damage
    from ctxmode.core.errors import CorruptDatabase, StoreUnavailable
    from ctxmode.hooks import handlers
    from ctxmode.store import Store

    if os.path.exists(config.repair_marker_for(db_path)) and _under_repair(  # one stat
        ev, key, root, db_path
    ):
        return None
    for attempt in (1, 2):
        store = _reused(stores, db_path)
        if store is None:
            try:
                store = Store.open(db_path, root=root, recover=True)
            except CorruptDatabase as exc:  # damage in the schema itself, or a page it needs
                if attempt == 2:
                    raise
                damage: BaseException = exc
                store = None
            else:
                if store.recovered_file is not None:
                    log(root, "WARN", f"unusable store moved aside to {store.recovered_file}")
                store.limit_lock_wait(HOOK_BUSY_TIMEOUT_MS, HOOK_LOCK_RETRIES)
        if store is not None:
            try:
                result = handlers.handle(store, ev, key)
            except BaseException as exc:
                if stores is not None:
                    stores.pop(db_path, None)
                store.close()
                from ctxmode.sessions.spool import Spooled  # the failure path only

                if isinstance(exc, Spooled):
                    log(root, "WARN", f"{event}: store locked; the call's events wait in {exc}")
                    return None
                # Damage inside the file (a bad index page, say) shows only when a statement
                # touches it, after the store opened fine.
                if attempt == 2 or not isinstance(exc, Exception) or not is_damage(exc):
                    raise
                damage = exc
            else:
                if os.path.isdir(config.spool_dir_for(store.db_file)):  # one stat if none waits
                    _replay_spool(store, root)
                if stores is not None and not store.conn.in_transaction:
                    keep(stores, db_path, store)
                elif keep_open and not store.conn.in_transaction:
                    _KEPT_OPEN.append(store)  # closed by the process exit, without a checkpoint
                else:
                    store.close()
                return result
        from ctxmode.core.repair import repair_for_hook  # the damage path only

        try:
            done = repair_for_hook(db_path)
        except StoreUnavailable as exc:  # a writer held the store past the repair's wait
            log(root, "WARN", f"damaged store ({damage}): repair not done yet ({exc})")
            _spool_during_repair(ev, key, root, db_path)
            return None
        if done is None:
            log(
                root,
                "WARN",
                f"damaged store ({damage}): `ctxmode doctor --repair` runs in the background",
            )
            _spool_during_repair(ev, key, root, db_path)
            return None
        account, moved = done
        kept = f"; the damaged file is kept as {moved}" if moved else ""
        log(root, "WARN", f"damaged store ({damage}): {account}{kept}")
    return None


#: Hook kinds that run as usual while a repair works in the same file: what they write cannot
#: wait in the spool (a snapshot of a session about to be compacted, the startup brief).
_DURING_REPAIR = frozenset({"pre_compact", "session_start"})


def _under_repair(ev: NormalizedHookEvent, key: str | None, root: str, db_path: str) -> bool:
    """True when a repair has the store (``core.repair.repair``): the call went to the spool
    instead. A snapshot before a compaction and the startup brief (``_DURING_REPAIR``) run
    as usual while the repair works in the same file. A repair killed midway is
    taken over here (finished now, or started again in the background for a large store)."""
    from ctxmode.core.errors import StoreUnavailable
    from ctxmode.core.repair import repair_for_hook, repair_in_place_running, repair_running

    if ev.kind in _DURING_REPAIR and repair_in_place_running(db_path):
        return False  # worth a short wait for the lock: the file stays usable
    if not repair_running(db_path):
        try:
            done = repair_for_hook(db_path)  # an interrupted repair: finish it
        except StoreUnavailable as exc:  # a writer held the store past the repair's wait
            log(root, "WARN", f"interrupted repair not finished yet ({exc})")
            done = None
        if done is not None:
            log(root, "WARN", f"finished an interrupted repair of the store: {done[0]}")
            return False
    _spool_during_repair(ev, key, root, db_path)
    return True


def _spool_during_repair(ev: NormalizedHookEvent, key: str | None, root: str, db_path: str) -> None:
    """Keep the call's records in the spool (``sessions.spool``) while a repair has the store:
    the first hook after it writes them, and so does the repair when it ends."""
    import time

    from ctxmode.core import config
    from ctxmode.hooks.handlers import records_of
    from ctxmode.sessions import spool

    if key is None or ev.kind not in spool.KINDS:
        log(root, "INFO", f"{ev.kind}: not recorded, the store is being repaired")
        return
    where = config.spool_dir_for(db_path)
    if spool.keep(db_path, ev, records_of(ev), key, root, int(time.time() * 1000)):
        log(root, "WARN", f"{ev.kind}: store under repair; the call's events wait in {where}")
    else:
        log(root, "WARN", f"{ev.kind}: store under repair and the spool is full; not recorded")
