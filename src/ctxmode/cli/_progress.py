"""Progress display for long CLI work: rich on a terminal, nothing with ``--json`` or when piped.

Progress goes to stderr and disappears when done (``transient``), so stdout stays one clean
document. Core functions never draw anything: they accept a ``(done, total)`` callback, which
``bar`` provides; a single long core call without such a callback gets ``working`` (a spinner
with elapsed time, which claims no percentage it cannot measure). rich is imported only when
something is drawn, so ``--json`` and piped runs skip its import time.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any

Update = Callable[[int, int], None]


def shown(quiet: bool) -> bool:
    """Draw progress only for people: not with ``--json`` and only when stderr is a terminal."""
    return not quiet and sys.stderr.isatty()


@contextmanager
def working(label: str, *, quiet: bool) -> Iterator[None]:
    """A spinner with elapsed time around one long call."""
    if not shown(quiet):
        yield
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn(label), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        progress.add_task(label, total=None)
        yield


@contextmanager
def bar(label: str, *, quiet: bool) -> Iterator[Update]:
    """A progress bar driven by the yielded ``update(done, total)`` callback."""
    if not shown(quiet):
        yield lambda done, total: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn(label),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(label, total=None)

        def update(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        yield update


@contextmanager
def bars(verb: str, *, quiet: bool) -> Iterator[Callable[[str, int, int], None]]:
    """One bar per item of a long call (``{verb} {item}``), driven by the yielded
    ``update(item, done, total)``: a new item closes the previous item's bar."""
    if not shown(quiet):
        yield lambda item, done, total: None
        return
    with ExitStack() as stack:
        current: list[Any] = [None, None]  # the item shown, its bar's update

        def update(item: str, done: int, total: int) -> None:
            if item != current[0]:
                stack.close()
                current[:] = [item, stack.enter_context(bar(f"{verb} {item}", quiet=quiet))]
            current[1](done, total)

        yield update
