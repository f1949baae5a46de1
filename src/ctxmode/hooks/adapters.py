"""The hook payload adapters moved to ``ctxmode.sessions.adapters`` (the transcript import uses
them too); this name stays for code that still imports it from here."""

from ctxmode.sessions.adapters import *  # noqa: F403
from ctxmode.sessions.adapters import AGENTS, call_key, normalize, strip_injected

__all__ = ["AGENTS", "call_key", "normalize", "strip_injected"]
