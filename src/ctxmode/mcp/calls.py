"""Tool calls, resource reads and prompts, from the registry's rows (``mcp.registry``).

``arguments(tool, given)`` checks what a client sent against the tool's parameters and returns
the keyword arguments of its body, every parameter present (defaults filled in), or raises
``ArgumentError`` whose text says what was wrong and what to send. The policy, stated here
rather than inherited from a validation library:

- JSON types as listed: a string for ``string``, ``true``/``false`` for ``boolean``, a number
  for ``number`` and a whole number for ``integer`` (``true`` is not ``1``);
- forgiven, because agents send them: a whole number written as a string or a float
  (``"5"``, ``5.0``) for an integer, a number written as a string for a number, a JSON text
  in a string for a list or an object (``'["a.py"]'``), ``null`` for a parameter that has a
  default (the default);
- enums, bounds and item counts as listed; names the schema does not list are ignored (the
  listed schemas allow them); lone surrogates in strings are replaced (they cannot be stored).

``call_tool`` / ``read_resource`` / ``get_prompt`` run the body (``mcp.tools``, imported on
first use) and shape the MCP result: a ``CtxmodeError`` is an ``isError`` result reading
"Error executing tool <name>: <message>" (the core's hint in tool words, ``for_agent``);
anything else is "Error executing tool <name>" with the traceback on stderr only.

Standard library and ``core`` at import (the front imports it before any tool runs).
"""

from __future__ import annotations

import importlib
import json
import math
import sys

from ctxmode.core.errors import CtxmodeError
from ctxmode.mcp.registry import REQUIRED, Prompt, Resource, Tool

TYPE_CHECKING = False  # mypy reads it as true; ``typing`` is not imported here at run time
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from ctxmode.mcp.tools.common import StoreRunner

#: Characters of a wrong value echoed in an argument error.
ECHO_CHARS = 60


class ArgumentError(CtxmodeError):
    """Arguments a tool cannot take; the message says what to send instead."""


class _Wrong(Exception):
    """One value that does not fit its schema: ``expected`` says what would."""

    def __init__(self, expected: str) -> None:
        super().__init__(expected)
        self.expected = expected


def describe(schema: dict[str, Any]) -> str:
    """A short human form of a schema: ``integer``, ``one of: a, b``, ``list of string``."""
    options = schema.get("anyOf")
    if isinstance(options, list):
        return " or ".join(describe(o) for o in options if o.get("type") != "null")
    if "enum" in schema:
        return "one of: " + ", ".join(str(v) for v in schema["enum"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list of {describe(schema.get('items', {}))}"
    if kind in ("integer", "number"):
        low, high = schema.get("minimum"), schema.get("maximum")
        above = schema.get("exclusiveMinimum")
        if low is not None and high is not None:
            return f"{kind} {_num(low)}-{_num(high)}"
        if above is not None and high is not None:
            return f"{kind} over {_num(above)}, at most {_num(high)}"
        if low is not None:
            return f"{kind} >= {_num(low)}"
    return str(kind)


def _num(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _bounds(value: float, schema: dict[str, Any]) -> None:
    low, high = schema.get("minimum"), schema.get("maximum")
    above = schema.get("exclusiveMinimum")
    if (
        (low is not None and value < low)
        or (high is not None and value > high)
        or (above is not None and value <= above)
    ):
        raise _Wrong(describe(schema))


def _from_text(value: str) -> Any:
    """A JSON text sent in a string (a list or an object), else the string itself."""
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return value


def value(given: Any, schema: dict[str, Any]) -> Any:
    """``given`` as the body takes it under ``schema``, or ``_Wrong``."""
    options = schema.get("anyOf")
    if options is not None:
        for option in options:
            try:
                return value(given, option)
            except _Wrong:
                continue
        raise _Wrong(describe(schema))
    kind = schema.get("type")
    if kind == "null":
        if given is None:
            return None
        raise _Wrong("null")
    if "enum" in schema:
        if isinstance(given, str) and given in schema["enum"]:
            return given
        raise _Wrong(describe(schema))
    if kind == "string" and isinstance(given, str):
        return given
    if kind == "boolean" and isinstance(given, bool):
        return given
    if kind in ("integer", "number") and not isinstance(given, bool):
        number = _number(given, whole=kind == "integer")
        _bounds(number, schema)
        return number
    if kind in ("array", "object") and isinstance(given, str):
        parsed = _from_text(given)
        if not isinstance(parsed, str):
            return value(parsed, schema)
    if kind == "array" and isinstance(given, list):
        low, high = schema.get("minItems", 0), schema.get("maxItems")
        if len(given) < low or (high is not None and len(given) > high):
            count = f"at least {low}" if high is None else f"{low}-{high}"
            raise _Wrong(f"{describe(schema)}, {count} item(s)")
        items = schema.get("items")
        return [value(v, items) for v in given] if items is not None else list(given)
    if kind == "object" and isinstance(given, dict):
        return dict(given)
    raise _Wrong(describe(schema))


def _number(given: Any, *, whole: bool) -> Any:
    """An int (``whole``) or a float from a JSON number or a numeric string, else ``_Wrong``."""
    kind = "integer" if whole else "number"
    if isinstance(given, str):
        try:
            given = int(given.strip()) if whole else float(given.strip())
        except ValueError:
            try:
                given = float(given.strip())
            except ValueError:
                raise _Wrong(kind) from None
    if type(given) not in (int, float):
        raise _Wrong(kind)
    try:
        as_float = float(given)
    except OverflowError:
        raise _Wrong(kind) from None
    if not math.isfinite(as_float):
        raise _Wrong(kind)
    if not whole:
        return as_float
    if isinstance(given, float):
        if not as_float.is_integer():
            raise _Wrong(kind)
        given = int(given)
    if not -(2**63) <= given < 2**63:  # what SQLite stores
        raise _Wrong("integer of at most 64 bits")
    return given


def _echo(given: Any) -> str:
    """A wrong value as the error repeats it: redacted, then cut."""
    from ctxmode.core.redact import redact

    text = redact(repr(given))  # redacted before it is cut: a cut secret matches no pattern
    return text if len(text) <= ECHO_CHARS else text[: ECHO_CHARS - 3] + "..."


def wanted(tool: Tool) -> str:
    """What to send: every parameter with its kind, optional ones marked."""
    return ", ".join(
        f"{p.name} ({describe(p.schema)}{'' if p.required else ', optional'})" for p in tool.params
    )


def arguments(tool: Tool, given: Any) -> dict[str, Any]:
    """The keyword arguments of ``tool``'s body from what the client sent, or ``ArgumentError``."""
    from ctxmode.core.redact import scrub_surrogates

    if given is None:
        given = {}
    if not isinstance(given, dict):
        problems = [f"arguments must be an object (got {_echo(given)})"]
    else:
        given = scrub_surrogates(given)
        problems, out = [], {}
        for param in tool.params:
            sent = given.get(param.name)
            if sent is None and not param.required:
                out[param.name] = _default(param.default)
                continue
            if param.name not in given:
                problems.append(f"{param.name} is required")
                continue
            try:
                out[param.name] = value(sent, param.schema)
            except _Wrong as wrong:
                problems.append(f"{param.name}: expected {wrong.expected} (got {_echo(sent)})")
        if not problems:
            return out
    raise ArgumentError(
        f"invalid arguments for {tool.name}: {'; '.join(problems)}. Send: {wanted(tool)}"
    )


def _default(default: Any) -> Any:
    """A fresh copy of a default (a list default must not be shared between calls)."""
    assert default is not REQUIRED
    return json.loads(json.dumps(default)) if isinstance(default, list | dict) else default


# -- running the bodies ----------------------------------------------------------------------


def body(target: str) -> Callable[..., Any]:
    """The function a row's ``body`` names: ``"knowledge:write_context"`` is
    ``write_context`` of ``mcp.tools.knowledge`` (imported on first use)."""
    module, _, name = target.partition(":")
    fn: Callable[..., Any] = getattr(importlib.import_module(f"ctxmode.mcp.tools.{module}"), name)
    return fn


def load_all() -> None:
    """Import every body (the server's warm-up, so that the first call pays none of it)."""
    from ctxmode.mcp.registry import PROMPTS, RESOURCES, TOOLS

    for target in [t.body for t in TOOLS] + [r.body for r in RESOURCES] + [p.body for p in PROMPTS]:
        body(target)


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def error_result(text: str) -> dict[str, Any]:
    return {"content": [_text(text)], "isError": True}


def call_tool(runner: StoreRunner, tool: Tool, given: Any) -> dict[str, Any]:
    """Check ``given``, run the body: the ``tools/call`` result (never raises)."""
    from ctxmode.mcp.tools.common import for_agent

    try:
        out = body(tool.body)(runner, **arguments(tool, given))
    except ArgumentError as exc:
        return error_result(str(exc))
    except CtxmodeError as exc:
        return error_result(f"Error executing tool {tool.name}: {for_agent(exc)}")
    except Exception:  # noqa: BLE001 - a crash: its text stays in the server's log
        import traceback

        print(f"ctxmode serve: tool {tool.name!r} raised", file=sys.stderr)
        traceback.print_exc(file=sys.stderr)
        return error_result(f"Error executing tool {tool.name}")
    return {"content": [_text(out.text)], "isError": False, "structuredContent": out.data}


def read_resource(runner: StoreRunner, resource: Resource) -> dict[str, Any]:
    """The ``resources/read`` result of ``resource``; a ``CtxmodeError`` propagates."""
    text = body(resource.body)(runner)
    entry = {"uri": resource.uri, "mimeType": resource.mime_type, "text": text}
    return {"contents": [entry]}


def get_prompt(prompt: Prompt, given: Any) -> dict[str, Any]:
    """The ``prompts/get`` result, or ``ArgumentError`` (names it does not take, non-strings)."""
    if given is None:
        given = {}
    unknown = sorted(set(given) - set(prompt.arguments)) if isinstance(given, dict) else []
    if (
        not isinstance(given, dict)
        or unknown
        or any(not isinstance(v, str) for v in given.values())
    ):
        problem = f"unknown argument(s) {', '.join(unknown)}" if unknown else "strings only"
        raise ArgumentError(
            f"invalid arguments for prompt {prompt.name}: {problem}. Send any of: "
            f"{', '.join(prompt.arguments)} (strings, optional)"
        )
    text = body(prompt.body)({n: given.get(n, "") for n in prompt.arguments})
    return {
        "description": prompt.description,
        "messages": [{"role": "user", "content": _text(text)}],
    }
