"""Console entry point: ``ctxmode hook ...`` and ``ctxmode serve`` skip the CLI stack entirely.

Hooks run on every tool call of an agent, so their path imports only the standard library and
ctxmode's core; everything else goes to the click CLI.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    argv = sys.argv[1:]
    # ``hook --help``, or ``hook`` alone typed at a terminal, is a person asking: the CLI
    # prints its help. An agent's call (a payload on stdin) always takes the fast path.
    asking = argv[1:2] in (["-h"], ["--help"]) or (len(argv) == 1 and sys.stdin.isatty())
    if argv[:1] == ["hook"] and not asking:
        from ctxmode.hooks.runner import main as hook_main

        code = hook_main(argv[1:], keep_store_open=True)
        # A hook runs on every tool call: skip interpreter teardown (~5 ms) and the WAL
        # checkpoint that closing SQLite's last connection does (an fsync, ~1 ms). Everything
        # is committed and the log is written unbuffered; only the std streams need a flush.
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    if argv[:1] == ["serve"] and not {"-h", "--help"} & set(argv):
        # The MCP handshake is timed by the agent: skip click, go straight to the server.
        parent = os.getppid()  # before the slow imports: the agent may be gone by then
        from ctxmode.hooks.in_agent import prepare, record
        from ctxmode.mcp.front import main as serve_main

        # The entry point composes the faces: the server runs in-agent hook calls with the
        # hook path's own code.
        sys.exit(serve_main(argv[1:], parent_pid=parent, record=record, prepare=prepare))
    from ctxmode.cli import cli

    cli(prog_name="ctxmode")
