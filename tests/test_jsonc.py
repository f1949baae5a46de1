"""``agents.jsonc``: edits keep every comment outside the changed entries, results parse back."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxmode.agents import jsonc
from ctxmode.core.errors import InvalidInput

DOC = """{
  // editor
  "theme": "dark", /* inline */
  "servers": {"a": 1},
  "list": [1, 2,], // trailing comma inside
}
"""


def test_loads_and_has_comments() -> None:
    assert jsonc.loads(DOC) == {"theme": "dark", "servers": {"a": 1}, "list": [1, 2]}
    assert jsonc.has_comments(DOC)
    assert not jsonc.has_comments('{"a": "// not a comment", "b": "/* nor this */"}')
    assert jsonc.loads('{"url": "http://x//y"} // c') == {"url": "http://x//y"}
    with pytest.raises(json.JSONDecodeError):
        jsonc.loads("{ // open")


def test_replace_insert_remove_keep_comments() -> None:
    old = jsonc.loads(DOC)
    new = {"theme": "light", "list": [1, 2], "added": {"k": [True, None]}}
    out = jsonc.splice(DOC, old, new, 2)
    assert jsonc.loads(out) == new
    for kept in ("// editor", "/* inline */", "// trailing comma inside"):
        assert kept in out
    assert '"servers"' not in out
    assert jsonc.splice(DOC, old, old, 2) == DOC


def test_member_with_inner_comment_is_refused() -> None:
    doc = '{"a": {\n  // mine\n  "x": 1\n}, "b": 2}'
    old = jsonc.loads(doc)
    with pytest.raises(InvalidInput, match="'a' entry has comments"):
        jsonc.splice(doc, old, {"a": {"x": 2}, "b": 2}, 2)
    assert jsonc.loads(jsonc.splice(doc, old, {"a": {"x": 1}, "b": 3}, 2)) == {
        "a": {"x": 1},
        "b": 3,
    }


_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text('ab/*"\\ ', max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text("xy", max_size=2), inner),
    max_leaves=6,
)
_objects = st.dictionaries(st.sampled_from(["a", "b", "c", "d/*"]), _values, max_size=4)


@settings(max_examples=200, deadline=None)
@given(_objects, _objects, st.booleans())
def test_any_edit_parses_back_to_the_new_object(old: dict, new: dict, trailing: bool) -> None:  # type: ignore[type-arg]
    lines = [
        f"  // note {i}\n  {json.dumps(k)}: {json.dumps(v)},"
        for i, (k, v) in enumerate(old.items())
    ]
    text = "{\n" + "\n".join(lines)
    if not trailing:
        text = text.rstrip(",")
    text += "\n  /* end */\n}\n"
    out = jsonc.splice(text, old, new, 2)
    assert jsonc.loads(out) == new
    assert "/* end */" in out
