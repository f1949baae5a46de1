"""``core._lean``: the hook path's stand-ins behave like ``typing.NamedTuple`` and hashlib."""

from __future__ import annotations

import hashlib
import pickle
import re
import typing

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxmode.core import _lean
from ctxmode.core.config import Settings
from ctxmode.sessions.adapters import find_uuid
from ctxmode.sessions.events import EventRecord


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


_UUID_RE = re.compile(
    r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="0123456789abcdefgABF-x/.", max_size=90))
def test_find_uuid_agrees_with_the_regex(text: str) -> None:
    m = _UUID_RE.search(text)
    assert find_uuid(text) == (m.group(0) if m else None)


def test_find_uuid_in_transcript_names() -> None:
    sid = "5f0c1e2a-7b3d-4c8e-9a10-2b3c4d5e6f70"
    assert find_uuid(f"{sid}.jsonl") == sid
    assert find_uuid(f"rollout-2026-11-30T06-17-46-{sid.upper()}.jsonl") == sid.upper()
    assert find_uuid("no-uuid-here.jsonl") is None


def test_lazy_regex_behaves_like_a_compiled_pattern() -> None:
    lazy = _lean.LazyRegex(r"(\w+)=(\d+)", re.ASCII)
    compiled = re.compile(r"(\w+)=(\d+)", re.ASCII)
    text = "a=1, bb=22 c=x"
    assert lazy.findall(text) == compiled.findall(text)
    assert lazy.sub(r"\1", text) == compiled.sub(r"\1", text)
    assert [m.span() for m in lazy.finditer(text)] == [m.span() for m in compiled.finditer(text)]
    assert lazy.split(text) == compiled.split(text)
    assert lazy.match(text) is not None and lazy.fullmatch(text) is None


@settings(max_examples=300, deadline=None)
@given(
    st.text(
        alphabet=st.characters(max_codepoint=0x7F) | st.sampled_from("é中\ufffe\uffff\ud800"),
        max_size=40,
    )
)
def test_snapshot_escaping_without_regex_matches_the_regex(text: str) -> None:
    from ctxmode.sessions import snapshot

    invalid = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
    cleaned = invalid.sub("", text)
    expected = cleaned.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    expected = expected.replace('"', "&quot;").replace("\n", " ")
    assert snapshot.xml_text(text) == expected
    name_ok = re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", text) is not None
    assert snapshot._is_attr_name(text) == name_ok
