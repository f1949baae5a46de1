"""CLI commands of this area (filled in by its issue)."""

from __future__ import annotations

import click


def register(cli: click.Group) -> None:
    """Add this module's commands to the root group."""
