"""``ctxmode._lean``: the hook path's stand-ins behave like ``typing.NamedTuple`` and hashlib."""

from __future__ import annotations

import hashlib
import pickle
import typing

import pytest

from ctxmode import _lean
from ctxmode.config import Settings
from ctxmode.events import EventRecord


class Point(_lean.NamedTuple):  # type: ignore[misc]
    """A point."""

    x: int
    y: int = 0
    tags: tuple[str, ...] = ()

    @property
    def norm1(self) -> int:
        return abs(self.x) + abs(self.y)

    def moved(self, dx: int) -> Point:
        return self._replace(x=self.x + dx)


class TypedPoint(typing.NamedTuple):
    x: int
    y: int = 0
    tags: tuple[str, ...] = ()


def test_records_match_typing_namedtuple() -> None:
    p, t = Point(3, -4), TypedPoint(3, -4)
    assert tuple(p) == tuple(t) == (3, -4, ())
    assert Point._fields == TypedPoint._fields == ("x", "y", "tags")
    assert Point._field_defaults == TypedPoint._field_defaults == {"y": 0, "tags": ()}
    assert p._asdict() == t._asdict()
    assert p.norm1 == 7 and p.moved(2) == Point(5, -4)
    assert Point.__doc__ == "A point." and Point.__name__ == "Point"
    assert Point.__module__ == __name__
    assert repr(p) == "Point(x=3, y=-4, tags=())"
    with pytest.raises(AttributeError):
        p.z = 1  # type: ignore[attr-defined]
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]
    assert pickle.loads(pickle.dumps(p)) == p


def test_a_field_without_default_after_one_with_is_refused() -> None:
    with pytest.raises(TypeError, match="cannot follow"):

        class Bad(_lean.NamedTuple):  # type: ignore[misc]
            a: int = 1
            b: int


def test_hook_path_records_are_lean_namedtuples() -> None:
    assert Settings().snapshot_bytes == 2048
    assert Settings()._replace(snapshot_bytes=4096).snapshot_bytes == 4096
    rec = EventRecord("file", "edit", {"path": "a.py"})
    assert rec.priority == 1 and rec._fields == ("category", "type", "data")


@pytest.mark.parametrize("data", [b"", b"abc", "数据 ✓".encode(), bytes(range(256)) * 50])
def test_sha256_hex_equals_hashlib(data: bytes) -> None:
    assert _lean.sha256_hex(data) == hashlib.sha256(data).hexdigest()
