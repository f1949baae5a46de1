"""Hook entry point placeholder: fails open until the hook layer lands."""

from __future__ import annotations


def main(argv: list[str]) -> int:
    return 0
