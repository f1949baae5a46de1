"""Light stand-ins for the hook path: the same behaviour without the costly stdlib imports.

A hook runs as a fresh process on every tool call of an agent, so every import it pays for is
paid thousands of times a day. Measured once by hand on top of ``import sqlite3, json`` (the
floor), fresh processes, median of 25: ``typing`` +7 ms, ``pathlib`` +8 ms, ``hashlib`` (OpenSSL)
+5 ms, ``getpass`` +3 ms. Modules on the hook path therefore write::

    TYPE_CHECKING = False  # mypy reads this name as true; at run time nothing is imported
    if TYPE_CHECKING:
        from typing import Any, NamedTuple
    else:
        from ctxmode.core._lean import NamedTuple

and use ``os.path`` and :func:`sha256_hex` instead of pathlib and hashlib.
``tests/test_hooks.py::test_hook_path_loads_no_slow_stdlib_modules`` checks that no hook kind
loads them.
"""

from __future__ import annotations

import collections
import re
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
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
    # The builtin SHA-2 module, not hashlib's OpenSSL: same digests, no libcrypto load.
    # (Asking for the wrong name first costs a failed import search, hence the version test.)
    try:
        if sys.version_info >= (3, 12):
            from _sha2 import sha256  # type: ignore[import-not-found]
        else:
            from _sha256 import sha256  # type: ignore[import-not-found]
    except ImportError:  # a build without the builtin modules
        from hashlib import sha256
    return sha256


_sha256 = _sha256_factory()


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256 of ``data``; identical to ``hashlib.sha256(data).hexdigest()``."""
    return str(_sha256(data).hexdigest())


class LazyRegex:
    """A regular expression compiled on first use.

    A hook process handles one event, so most of a module's patterns are never used in it;
    compiling them all at import cost ~2 ms per hook. Same methods as ``re.Pattern``.
    """

    __slots__ = ("_compiled", "flags", "pattern")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags
        self._compiled: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        if self._compiled is None:
            self._compiled = re.compile(self.pattern, self.flags)
        return self._compiled

    def search(self, text: str, pos: int = 0) -> re.Match[str] | None:
        return self.compiled.search(text, pos)

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        return self.compiled.match(text, pos)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        return self.compiled.fullmatch(text)

    def findall(self, text: str) -> list[Any]:
        return self.compiled.findall(text)

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self.compiled.finditer(text)

    def split(self, text: str, maxsplit: int = 0) -> list[str | Any]:
        return self.compiled.split(text, maxsplit)

    def sub(self, repl: str | Callable[[re.Match[str]], str], text: str, count: int = 0) -> str:
        return self.compiled.sub(repl, text, count)
