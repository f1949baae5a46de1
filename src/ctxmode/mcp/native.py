"""Tool calls, resource reads and the prompt answered without the ``mcp`` SDK.

The SDK server costs about a second of imports (the protocol's pydantic models), paid in the
agent's session on the first call. Its declarations (``mcp.sdk``) are the contract; the front
holds what they list (``listing.json``), so a call whose arguments the SDK would take as they
are can run the same body (``mcp.tools``) here, with the same reply:

- ``arguments(schema, given)`` is the SDK's pipeline for the schemas ctxmode lists: lone
  surrogates scrubbed, a JSON text in a string pre-parsed where the parameter is not a plain
  string (``func_metadata.pre_parse_json``), names the schema does not know dropped, then a
  strict check: JSON types exactly (no ``"5"`` for 5, no ``true`` for 1), enums, bounds, item
  counts, and the defaults filled in. Whatever it is not sure of (a value pydantic would
  coerce or reject, a missing argument, a keyword it does not know) is ``None``: that call goes
  to the SDK server, whose answer (its coercion or its argument error) is then the reply;
- ``call_tool`` / ``read_resource`` / ``get_prompt`` run the body and shape the result as the
  SDK does: ``isError`` results reading "Error executing tool <name>: <message>" for a
  ``CtxmodeError`` (the core's CLI hints reworded, ``for_agent``), "Error executing tool
  <name>" and a traceback on stderr for anything else.

``tests/test_mcp_native.py`` sends the same calls to both and compares the replies.
Standard library only at import; the bodies load on first use (``mcp.tools``).
"""

from __future__ import annotations

import copy
import json
import math
import sys
import traceback

TYPE_CHECKING = False  # mypy reads it as true; ``typing`` is not imported at run time
if TYPE_CHECKING:
    from typing import Any

    from ctxmode.mcp.tools.common import StoreRunner


class NotNative(Exception):
    """The SDK server must decide: a value it would coerce or reject, or a schema it has."""


#: Keywords of a tool's input schema ``arguments`` understands (the rest are ``_value``'s).
_OBJECT_KEYS = {"type", "properties", "required", "title"}
#: Schema keywords ``_value`` understands; any other sends the call to the SDK.
_KNOWN = {
    "type",
    "enum",
    "anyOf",
    "items",
    "minItems",
    "maxItems",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "additionalProperties",
    "description",
    "default",
    "title",
}


def _plain_string(schema: dict[str, Any]) -> bool:
    """Whether the parameter's annotation is ``str`` itself (no pre-parse: the SDK's rule)."""
    return schema.get("type") == "string" and "enum" not in schema and "anyOf" not in schema


def _pre_parse(value: Any, schema: dict[str, Any]) -> Any:
    """``pre_parse_json``: a string holding a JSON list, object or null, parsed."""
    if not isinstance(value, str) or _plain_string(schema):
        return value
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):
        return value
    return value if isinstance(parsed, str | int | float) else parsed


def _bounds(value: float, schema: dict[str, Any]) -> None:
    low, high = schema.get("minimum"), schema.get("maximum")
    above, below = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if (
        (low is not None and value < low)
        or (high is not None and value > high)
        or (above is not None and value <= above)
        or (below is not None and value >= below)
    ):
        raise NotNative("out of bounds")


def _value(value: Any, schema: dict[str, Any]) -> Any:
    """``value`` as the SDK would hand it to the body, if it takes it without coercion."""
    if set(schema) - _KNOWN:
        raise NotNative(f"schema keywords {sorted(set(schema) - _KNOWN)}")
    options = schema.get("anyOf")
    if options is not None:
        for option in options:
            try:
                return _value(value, option)
            except NotNative:
                continue
        raise NotNative("no option of anyOf")
    kind = schema.get("type")
    if "enum" in schema:
        if kind != "string" or not isinstance(value, str) or value not in schema["enum"]:
            raise NotNative("enum")
        return value
    if kind == "string" and isinstance(value, str):
        return value
    if kind == "null" and value is None:
        return None
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "integer" and type(value) is int:
        _bounds(value, schema)
        return value
    if kind == "number" and type(value) in (int, float):
        try:
            number = float(value)
        except OverflowError as exc:
            raise NotNative("number") from exc
        if not math.isfinite(number):
            raise NotNative("number")
        _bounds(number, schema)
        return number
    if kind == "array" and isinstance(value, list):
        if len(value) < schema.get("minItems", 0) or len(value) > schema.get(
            "maxItems", len(value)
        ):
            raise NotNative("item count")
        items = schema.get("items")
        return [_value(v, items) for v in value] if items is not None else list(value)
    if kind == "object" and isinstance(value, dict):
        if schema.get("additionalProperties", True) is not True:
            raise NotNative("object schema")
        return dict(value)
    raise NotNative(f"not a {kind}")


def arguments(schema: dict[str, Any], given: Any) -> dict[str, Any] | None:
    """The keyword arguments the SDK would call the body with, or ``None``: ask the SDK."""
    from ctxmode.core.redact import scrub_surrogates

    if given is None:
        given = {}
    if not isinstance(given, dict) or schema.get("type") != "object" or set(schema) - _OBJECT_KEYS:
        return None
    given = scrub_surrogates(given)
    props: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", ()))
    out: dict[str, Any] = {}
    try:
        for name, spec in props.items():
            if name in given:
                out[name] = _value(_pre_parse(given[name], spec), spec)
            elif name in required:
                return None
            else:
                out[name] = copy.deepcopy(spec.get("default"))
    except NotNative:
        return None
    return out


# -- results as the SDK shapes them ----------------------------------------------------------


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def call_tool(runner: StoreRunner, name: str, target: str, args: dict[str, Any]) -> dict[str, Any]:
    """Run the body ``target`` with checked ``args``: the ``tools/call`` result."""
    from ctxmode.core.errors import CtxmodeError
    from ctxmode.mcp import tools
    from ctxmode.mcp.tools.common import for_agent

    try:
        out = tools.body(target)(runner, **args)
    except CtxmodeError as exc:
        message = f"Error executing tool {name}: {for_agent(exc)}"
        return {"content": [_text(message)], "isError": True}
    except Exception:  # noqa: BLE001 - a crash: its text stays here, as the SDK does
        print(f"ctxmode serve: tool {name!r} raised", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
        return {"content": [_text(f"Error executing tool {name}")], "isError": True}
    return {"content": [_text(out.text)], "isError": False, "structuredContent": out.data}


def read_resource(runner: StoreRunner, resource: dict[str, Any], target: str) -> dict[str, Any]:
    """The ``resources/read`` result of a listed ``resource``; a core error propagates."""
    from ctxmode.mcp import tools

    text = tools.body(target)(runner)
    entry = {"uri": resource["uri"], "mimeType": resource.get("mimeType"), "text": text}
    return {"contents": [{k: v for k, v in entry.items() if v is not None}]}


def get_prompt(prompt: dict[str, Any], given: Any) -> dict[str, Any] | None:
    """The ``prompts/get`` result of the decision prompt, or ``None``: ask the SDK."""
    names = {a["name"] for a in prompt.get("arguments", ())}
    if given is None:
        given = {}
    if (
        not isinstance(given, dict)
        or set(given) - names
        or any(not isinstance(v, str) for v in given.values())
    ):
        return None
    from ctxmode.mcp.tools.knowledge import decision_prompt

    text = decision_prompt({n: given.get(n, "") for n in names})
    result: dict[str, Any] = {"messages": [{"role": "user", "content": _text(text)}]}
    if prompt.get("description") is not None:
        result = {"description": prompt["description"], **result}
    return result
