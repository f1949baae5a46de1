"""Hook calls made inside the agent: Claude Code's ``"type": "mcp_tool"`` handlers calling the
running ``ctxmode serve`` (its hidden ``record_hook`` tool) instead of starting a process.

``agents.claude`` holds what the installer writes (``TEMPLATE``, measured substitution rules);
``payload_from`` turns what arrives back into the payload a command hook would have read on
stdin (minus fields extraction does not use), and ``record`` runs it through the command hooks'
own path (``runner.run_payload``): same adapters, handlers, redaction, idempotency key and fail-open
boundary. Standard library only, like every hook.
"""

from __future__ import annotations

import atexit
import json

from ctxmode.hooks import hooklog, runner

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time (see _lean)
if TYPE_CHECKING:
    from typing import Any

    from ctxmode.store import Store

#: The server's open stores by path, reused across calls (``runner.run_payload``); closed at exit
#: (``close_stores``; every call is committed already, so a server ended by ``os._exit`` loses
#: nothing but the closing checkpoint).
_STORES: dict[str, tuple[Store, tuple[int, int]]] = {}


def prepare() -> None:
    """Import what ``record`` runs (the hook path) ahead of the first call and open the store
    of the server's working folder, if it has one (none is created here); the server's warm-up
    thread calls it after the handshake."""
    import os

    import ctxmode.agents.claude
    import ctxmode.hooks.backfill
    import ctxmode.hooks.handlers
    import ctxmode.sessions.adapters
    import ctxmode.sessions.records  # noqa: F401
    from ctxmode.core import config
    from ctxmode.store import Store

    root = config.find_root(os.getcwd())
    db_path = config.db_path_for(root)
    if db_path in _STORES or not os.path.isfile(db_path) or config.load_settings(root).disabled:
        return
    store = Store.open(db_path, root=root)
    store.limit_lock_wait(runner.HOOK_BUSY_TIMEOUT_MS, runner.HOOK_LOCK_RETRIES)
    runner.keep(_STORES, db_path, store)  # unless the first hook call opened it meanwhile


def close_stores() -> None:
    """Close the stores kept open for in-agent calls (the server is ending)."""
    while _STORES:
        _, (store, _ident) = _STORES.popitem()
        try:  # noqa: SIM105 - as in runner: no contextlib import for one statement
            store.close()
        except Exception:  # noqa: BLE001 - closing at exit must not fail the exit
            pass


atexit.register(close_stores)


def payload_from(substituted: dict[str, Any]) -> dict[str, Any]:
    """The hook payload back from its substituted ``TEMPLATE``: ``""`` is a missing field."""
    # Here, not at the top: the server imports this module before it answers ``initialize``.
    from ctxmode.agents.claude import BOOL_FIELDS, INT_FIELDS, JSON_FIELDS

    payload: dict[str, Any] = {}
    for name, value in substituted.items():
        if not isinstance(name, str) or value == "" or value is None:
            continue
        if isinstance(value, str):
            if name in JSON_FIELDS and value[:1] in ("{", "["):
                try:  # noqa: SIM105 - contextlib is one more import on the hook path
                    value = json.loads(value)
                except (ValueError, RecursionError):
                    pass  # a text response that only looks like JSON stays text
            elif name in INT_FIELDS and value.isdigit():
                value = int(value)
            elif name in BOOL_FIELDS and value in ("true", "false"):
                value = value == "true"
        payload[name] = value
    return payload


def record(arguments: Any, process_cwd: str) -> str:
    """Record one ``record_hook`` call; the text a command hook would print (maybe "").

    ``arguments``: ``{"event": "post-tool-use", "agent": "claude-code", "payload": {...}}``.
    Never raises: problems go to the project's ``hooks.log``, as for a command hook.
    """
    try:
        from ctxmode.core import config

        if config.is_disabled():
            return ""
        event = arguments.get("event") if isinstance(arguments, dict) else None
        agent = arguments.get("agent", "claude-code") if isinstance(arguments, dict) else None
        substituted = arguments.get("payload") if isinstance(arguments, dict) else None
        if not isinstance(event, str) or not isinstance(substituted, dict):
            hooklog.log(process_cwd, "WARN", f"record_hook: bad arguments {str(arguments)[:200]}")
            return ""
        size = sum(len(v) for v in substituted.values() if isinstance(v, str))
        if size > runner.MAX_PAYLOAD_BYTES:
            hooklog.log(process_cwd, "WARN", f"{event}: payload over the limit dropped")
            return ""
        _, output = runner.run_payload(
            event, str(agent), payload_from(substituted), process_cwd, stores=_STORES
        )
        return json.dumps(output, ensure_ascii=False) if output is not None else ""
    except Exception as exc:  # noqa: BLE001 - the hook boundary: fail open, log
        hooklog.log(process_cwd, "ERROR", f"record_hook: {type(exc).__name__}: {exc}")
        return ""
