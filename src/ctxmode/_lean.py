"""Light stand-ins for the hook path: the same behaviour without the costly stdlib imports.

A hook runs as a fresh process on every tool call of an agent, so every import it pays for is
paid thousands of times a day. Measured on top of ``import sqlite3, json`` (the floor): ``typing``
+7 ms, ``pathlib`` +8 ms, ``hashlib`` (OpenSSL) +5 ms, ``getpass`` +3 ms. Modules on the hook
path therefore write::

    TYPE_CHECKING = False  # mypy reads this name as true; at run time nothing is imported
    if TYPE_CHECKING:
        from typing import Any, NamedTuple
    else:
        from ctxmode._lean import NamedTuple

and use ``os.path`` and :func:`sha256_hex` instead of pathlib and hashlib.
``tests/test_architecture.py`` checks that a hook call loads none of those modules.
"""

from __future__ import annotations

import collections

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class _RecordMeta(type):
    """Builds ``class X(NamedTuple): a: int = 0`` as ``collections.namedtuple`` would.

    Fields are the class annotations in order, defaults their assigned values; methods,
    properties and the docstring are copied onto the namedtuple class (as ``typing`` does).
    """

    def __new__(mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> Any:
        if not bases:  # the ``NamedTuple`` base below
            return super().__new__(mcls, name, bases, namespace)
        fields = tuple(namespace.get("__annotations__", {}))
        defaults = tuple(namespace[field] for field in fields if field in namespace)
        if defaults and fields[-len(defaults) :] != tuple(f for f in fields if f in namespace):
            raise TypeError(f"{name}: fields without a default cannot follow fields with one")
        module = namespace.get("__module__")
        cls = collections.namedtuple(name, fields, defaults=defaults, module=module)  # type: ignore[misc]
        for key, value in namespace.items():
            if key in fields or key in ("__module__", "__dict__", "__weakref__"):
                continue
            setattr(cls, key, value)
        return cls


class NamedTuple(metaclass=_RecordMeta):
    """Run-time base for typed records on the hook path (mypy sees ``typing.NamedTuple``)."""


def _sha256_factory() -> Any:
    try:  # Python 3.12+: the builtin SHA-2 module, no OpenSSL load
        from _sha2 import sha256  # type: ignore[import-not-found]
    except ImportError:
        try:  # Python 3.11
            from _sha256 import sha256  # type: ignore[import-not-found]
        except ImportError:  # a build without the builtin modules
            from hashlib import sha256
    return sha256


_sha256 = _sha256_factory()


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256 of ``data``; identical to ``hashlib.sha256(data).hexdigest()``."""
    return str(_sha256(data).hexdigest())
