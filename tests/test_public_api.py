"""The public API is explicit: ``__all__`` is sorted, complete and importable."""

from __future__ import annotations

import subprocess
import sys

import ctxmode


def test_all_is_sorted_and_importable() -> None:
    assert ctxmode.__all__ == sorted(ctxmode.__all__)
    for name in ctxmode.__all__:
        assert getattr(ctxmode, name) is not None, name


def test_every_lazy_name_is_public_and_unknown_names_fail() -> None:
    assert set(ctxmode._WHERE) | {"__version__"} == set(ctxmode.__all__)
    try:
        ctxmode.NoSuchThing  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchThing" in str(exc)
    else:
        raise AssertionError("unknown attribute did not raise")


def test_importing_the_package_loads_no_submodule() -> None:
    code = "import sys, ctxmode; print(sorted(m for m in sys.modules if m.startswith('ctxmode')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['ctxmode']"
