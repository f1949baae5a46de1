"""The public API is explicit: ``__all__`` is sorted, complete and importable."""

from __future__ import annotations

import ctxmode


def test_all_is_sorted_and_importable() -> None:
    assert ctxmode.__all__ == sorted(ctxmode.__all__)
    for name in ctxmode.__all__:
        assert hasattr(ctxmode, name), name


def test_every_public_name_is_listed() -> None:
    public = {
        name
        for name, value in vars(ctxmode).items()
        if not name.startswith("_") and not isinstance(value, type(ctxmode))
    }
    assert public <= set(ctxmode.__all__)
