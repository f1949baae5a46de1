"""Console entry point: ``ctxmode hook ...`` and ``ctxmode serve`` skip the CLI stack entirely.

Hooks run on every tool call of an agent, so their path imports only the standard library and
ctxmode's core; everything else goes to the click CLI.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["hook"]:
        from ctxmode.hooks.runner import main as hook_main

        sys.exit(hook_main(argv[1:]))
    if argv[:1] == ["serve"] and not {"-h", "--help"} & set(argv):
        # The MCP handshake is timed by the agent: skip click, go straight to the server.
        parent = os.getppid()  # before the slow imports: the agent may be gone by then
        from ctxmode.mcp_server import main as serve_main

        sys.exit(serve_main(argv[1:], parent_pid=parent))
    from ctxmode.cli import cli

    cli(prog_name="ctxmode")
