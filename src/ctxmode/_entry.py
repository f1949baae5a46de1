"""Console entry point: ``ctxmode hook ...`` skips the CLI stack entirely.

Hooks run on every tool call of an agent, so their path imports only the standard library and
ctxmode's core; everything else goes to the click CLI.
"""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["hook"]:
        from ctxmode.hooks.runner import main as hook_main

        sys.exit(hook_main(argv[1:]))
    from ctxmode.cli import cli

    cli(prog_name="ctxmode")
