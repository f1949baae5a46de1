"""The package layout and its import direction, counting imports inside functions too.

Top-level units of ``ctxmode`` (a subpackage or a loose module) sit in layers; a unit may import
only units of lower layers (and itself). Two units of one layer never import each other, so no
cycle can form. The faces (CLI, hooks, MCP, web) sit on top and import each other only where
the CLI composes them.
"""

from __future__ import annotations

import ast
import builtins
import importlib
import importlib.util
import inspect
import re
from pathlib import Path

import pytest

import ctxmode
from conftest import HOT_PATH

PACKAGE = Path(ctxmode.__file__).parent

#: unit -> layer. Lower layers never import higher ones.
LAYERS: dict[str, int] = {
    "core": 0,
    "knowledge": 1,
    "sessions": 1,
    "agents": 1,
    "search": 2,
    "history": 2,
    "sandbox": 3,
    "exchange": 3,
    "store": 4,
    "stats": 4,
    "doctor": 5,
    "evals": 5,
    "cli": 6,
    "hooks": 6,
    "mcp": 6,
    "web": 6,
    "_entry": 7,
    "__main__": 8,
    "__init__": 9,  # ``ctxmode/__init__.py``: lazy re-exports of the public API
}
#: Face -> faces it may start: the CLI is the composition root of ``ui``, ``hook``, ``serve``.
FACES_ALLOWED = {("cli", "web"), ("cli", "hooks"), ("cli", "mcp")}
FACES = {"cli", "hooks", "mcp", "web"}
HEAVY = ("click", "rich", "mcp", "pydantic", "starlette", "uvicorn", "jinja2", "httpx", "anyio")
MAX_LOOSE_MODULES = 10
MAX_MODULE_LINES = 700


def _unit(path: Path) -> str:
    rel = path.relative_to(PACKAGE)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(["ctxmode", *parts])


def _imports(path: Path, *, top_level_only: bool = False) -> list[tuple[int, str]]:
    """(line, module) of every import of ``path``; relative imports resolved."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    package = _module_name(path).rsplit(".", 0 if path.name == "__init__.py" else 1)[0]
    out: list[tuple[int, str]] = []
    for node in nodes:
        if isinstance(node, ast.Import):
            out.extend((node.lineno, a.name) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if module == "ctxmode":
                # ``from ctxmode import x``: x is a unit, the version, or a public name that
                # ``__init__`` re-exports from ``store`` or ``core``: count where it lives.
                for a in node.names:
                    if a.name in LAYERS:
                        out.append((node.lineno, f"ctxmode.{a.name}"))
                    elif a.name != "__version__":
                        unit = "store" if a.name == "Store" else "core"
                        out.append((node.lineno, f"ctxmode.{unit}"))
            else:
                out.append((node.lineno, module))
    return out


def _target_unit(module: str) -> str | None:
    if module == "ctxmode":
        return "__init__"
    if not module.startswith("ctxmode."):
        return None
    return module.split(".")[1]


def _all_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def test_every_unit_has_a_layer() -> None:
    units = {_unit(p) for p in _all_files()}
    assert units <= set(LAYERS), sorted(units - set(LAYERS))


def test_imports_only_go_down() -> None:
    offenders = []
    for path in _all_files():
        own = _unit(path)
        for line, module in _imports(path):
            target = _target_unit(module)
            if target is None or target == own:
                continue
            if (own, target) in FACES_ALLOWED:
                continue
            if own == "__init__" or LAYERS[target] >= LAYERS[own]:
                if own == "__init__" and target in {"core", "store"}:
                    continue  # the public API re-exports, resolved lazily
                rel = path.relative_to(PACKAGE).as_posix()
                offenders.append(f"{rel}:{line} imports {module} ({own} -> {target})")
    assert not offenders, "\n".join(offenders)


#: The domain packages. The faces reach them through the use-case layer (``store``, and
#: ``stats``, ``doctor``, ``evals``, ``agents``, which need no store or sit above it); the hook
#: path (``hooks``) keeps its documented exception: it imports ``sessions`` directly.
DOMAIN = {"knowledge", "sessions", "search", "history", "sandbox", "exchange"}


def test_faces_reach_the_domain_through_the_store() -> None:
    """No exception: a face needing a domain operation gets a ``Store`` method, a domain type
    for an annotation comes from ``store.results`` and a constant from ``core``."""
    found = set()
    for path in _all_files():
        if _unit(path) not in {"cli", "mcp", "web"}:
            continue
        for _, module in _imports(path):
            if _target_unit(module) in DOMAIN:
                found.add((path.relative_to(PACKAGE).as_posix(), module))
    assert not found, f"call Store instead: {sorted(found)}"


def _graph_with(extra: tuple[str, str]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in _all_files():
        own = _unit(path)
        for _, module in _imports(path):
            target = _target_unit(module)
            if target and target != own:
                graph.setdefault(own, set()).add(target)
    graph.setdefault(extra[0], set()).add(extra[1])
    return graph


def _has_cycle(graph: dict[str, set[str]]) -> bool:
    state: dict[str, int] = {}

    def visit(node: str) -> bool:
        state[node] = 1
        for nxt in graph.get(node, ()):
            if state.get(nxt) == 1 or (nxt not in state and visit(nxt)):
                return True
        state[node] = 2
        return False

    return any(node not in state and visit(node) for node in list(graph))


def test_the_layer_check_catches_an_upward_import() -> None:
    """The checks above can fail: one upward edge (knowledge -> store) makes a cycle."""
    assert _has_cycle(_graph_with(("knowledge", "store")))
    assert LAYERS["knowledge"] < LAYERS["store"]


def test_no_cycle_between_units() -> None:
    graph = _graph_with(("core", "core"))
    graph["core"].discard("core")
    assert not _has_cycle(graph)


def _is_module(name: str) -> bool:
    path = PACKAGE.parent.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


#: Every package of ``ctxmode``, nested ones included (``mcp.sdk``, ``mcp.tools``).
PACKAGES = sorted(
    _module_name(p).removeprefix("ctxmode.")
    for p in PACKAGE.rglob("__init__.py")
    if p.parent != PACKAGE
)


def _package_graph(package: str) -> dict[str, set[str]]:
    """Module -> modules of ``package`` (at any depth) it imports; ``from a import b`` counts
    as importing ``a.b`` when ``b`` is a module. A package's ``__init__`` re-exporting its own
    modules is its API, not an edge."""
    graph: dict[str, set[str]] = {}
    prefix = f"ctxmode.{package}"
    for path in (PACKAGE / package.replace(".", "/")).rglob("*.py"):
        own = _module_name(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                targets = [
                    f"{node.module}.{a.name}"
                    if _is_module(f"{node.module}.{a.name}")
                    else node.module
                    for a in node.names
                ]
            for target in targets:
                inside = target == prefix or target.startswith(prefix + ".")
                if not inside or target == own:
                    continue
                if path.name == "__init__.py" and target.startswith(own + "."):
                    continue
                graph.setdefault(own, set()).add(target)
    return graph


@pytest.mark.parametrize("package", PACKAGES)
def test_no_cycle_inside_a_package(package: str) -> None:
    graph = _package_graph(package)
    assert not _has_cycle(graph), graph


def test_the_cycle_check_descends_into_nested_packages() -> None:
    """``mcp.sdk`` and ``mcp.tools`` are scanned, and one edge back from the registry to the
    SDK server (which imports the registry) is a cycle."""
    assert {"mcp.sdk", "mcp.tools"} <= set(PACKAGES)
    graph = _package_graph("mcp")
    assert "ctxmode.mcp.registry" in graph["ctxmode.mcp.sdk.server"]
    graph.setdefault("ctxmode.mcp.registry", set()).add("ctxmode.mcp.sdk.server")
    assert _has_cycle(graph)


def test_core_imports_no_interface_or_heavy_library_at_module_level() -> None:
    offenders = []
    for path in _all_files():
        if _unit(path) in FACES or _unit(path) in {"_entry", "__main__"}:
            continue
        for line, module in _imports(path, top_level_only=True):
            if module.split(".")[0] in HEAVY:
                offenders.append(f"{path.relative_to(PACKAGE)}:{line}: {module}")
    assert not offenders, offenders


def _reads_environment(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if (
            isinstance(node, ast.Attribute)
            and node.attr in {"environ", "getenv", "environb"}
            and isinstance(node.value, ast.Name)
            and node.value.id == "os"
        ):
            return True
    return False


def test_only_config_reads_the_environment() -> None:
    offenders = {
        path.relative_to(PACKAGE).as_posix()
        for path in _all_files()
        if path.name != "config.py" and _reads_environment(path)
    }
    # Subprocess launchers may pass an environment through; they must not read settings from it.
    allowed = {"sandbox/process.py", "cli/serve.py", "hooks/runner.py", "evals/agent.py"}
    assert offenders <= allowed, offenders


def test_every_package_says_what_it_holds_and_may_import() -> None:
    for init in PACKAGE.glob("*/__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
        assert len(doc) > 80, init
        assert "May import" in doc or init.parent.name == "cli", init


def test_the_house_stays_small() -> None:
    loose = [
        p.name
        for p in PACKAGE.glob("*.py")
        if p.name not in {"__init__.py", "__main__.py", "_entry.py"}
    ]
    assert len(loose) <= MAX_LOOSE_MODULES, loose
    big = {
        p.relative_to(PACKAGE).as_posix(): n
        for p in _all_files()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not big, big


def test_the_lean_idioms_stay_on_the_hot_path() -> None:
    """``TYPE_CHECKING = False`` and ``LazyRegex`` save milliseconds a hook pays on every tool
    call; off the hot path (``conftest.HOT_PATH``) and the MCP front's standard-library start
    they only cost readability."""
    offenders = []
    for path in _all_files():
        name = _module_name(path)
        if name in HOT_PATH or name.startswith("ctxmode.mcp."):
            continue
        text = path.read_text(encoding="utf-8")
        if "TYPE_CHECKING = False" in text or "LazyRegex(" in text:
            offenders.append(path.relative_to(PACKAGE).as_posix())
    assert not offenders, offenders


def test_the_mcp_server_path_never_imports_the_sdk() -> None:
    """What ``ctxmode serve`` runs (``mcp.front``, ``registry``, ``calls`` and the bodies in
    ``mcp.tools``) imports neither the SDK nor pydantic, not even inside a function, and never
    ``mcp.sdk``; ``mcp.registry`` imports only the standard library and ``core``;
    ``mcp.tools`` imports nothing else of ``mcp`` but the registry."""
    offenders = []
    mcp = PACKAGE / "mcp"
    served = [mcp / "front.py", mcp / "registry.py", mcp / "calls.py"]
    for path in [*served, *sorted((mcp / "tools").glob("*.py"))]:
        in_tools = path.parent.name == "tools"
        for line, module in _imports(path):
            heavy = module.split(".")[0] in HEAVY
            sdk = module.startswith("ctxmode.mcp.sdk")
            sideways = (
                in_tools
                and module.startswith("ctxmode.mcp.")
                and not module.startswith(("ctxmode.mcp.tools", "ctxmode.mcp.registry"))
            )
            above_core = (
                path.name == "registry.py"
                and module.startswith("ctxmode.")
                and not module.startswith("ctxmode.core.")
            )
            if heavy or sdk or sideways or above_core:
                offenders.append(f"{path.relative_to(PACKAGE)}:{line}: {module}")
    assert not offenders, offenders


#: A double-backticked dotted name in a docstring or a ``#:`` comment: ``mcp.calls.body``.
_DOTTED = re.compile(r"``([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?:\(\))?``")


def _doc_texts(path: Path) -> list[tuple[int, str]]:
    """(line, text) of the module's, classes' and functions' docstrings and ``#:`` comments."""
    source = path.read_text(encoding="utf-8")
    out = [
        (n, text) for n, text in enumerate(source.splitlines(), 1) if text.strip().startswith("#:")
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                out.append((first.lineno, first.value.value))
    return out


def _sets(cls: type, attr: str) -> bool:
    """Whether ``cls`` annotates ``attr`` or sets it on ``self`` in its own source."""
    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return False
    return attr in cls.__dict__.get("__annotations__", {}) or f"self.{attr}" in source


def _lookup(obj: object, attrs: list[str]) -> bool:
    """Whether ``obj.a.b...`` exists (an instance attribute a class sets on ``self`` counts)."""
    for attr in attrs:
        if hasattr(obj, attr):
            obj = getattr(obj, attr)
            continue
        if isinstance(obj, type):
            return any(_sets(cls, attr) for cls in obj.__mro__ if cls.__module__ != "builtins")
        return False
    return True


#: Last parts that make a dotted name a file name (``hooks.log``), not a Python name.
_FILE_SUFFIXES = {
    "json",
    "jsonc",
    "jsonl",
    "log",
    "md",
    "py",
    "toml",
    "db",
    "txt",
    "env",
    "js",
    "yaml",
}
#: SQL tables: ``chunks.path`` is a column, not a module's attribute.
_TABLES = set(
    re.findall(
        r"CREATE\s+(?:VIRTUAL\s+)?TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)",
        (PACKAGE / "core" / "schema.py").read_text(encoding="utf-8"),
    )
)


def _top_level_classes() -> dict[str, str]:
    """Class name -> the module of ``ctxmode`` that defines it at top level."""
    out: dict[str, str] = {}
    for path in _all_files():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                out.setdefault(node.name, _module_name(path))
    return out


_CLASSES = _top_level_classes()
#: Names a dotted reference to ctxmode code starts with: a module or package (at any depth),
#: a class, or a flat module name of the old layout (``search_query`` for ``search.query``).
_MODULE_NAMES = {p.stem for p in _all_files()} | set(LAYERS)


def _ours(first: str) -> bool:
    old_flat = "_" in first.strip("_") and first.split("_")[0] in LAYERS
    return first in _MODULE_NAMES or first in _CLASSES or old_flat


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _resolves(name: str, path: Path) -> bool | None:
    """Whether the dotted ``name`` written in ``path`` names something real: a module of
    ``ctxmode`` (from the package root, or from the writer's package or one above it) or an
    attribute of one, a class of ``ctxmode`` and its attribute, an attribute of a name the
    writer's module binds, or a module of the standard library or a dependency (and its
    attribute). ``None``: not a name of code (a file, a column, a camelCase JSON key, a
    local variable)."""
    parts = name.split(".")
    json_key = any(re.match(r"[a-z]+[A-Z]", part) for part in parts)  # ``folderTrust``
    if parts[-1] in _FILE_SUFFIXES or parts[0] in _TABLES or json_key:
        return None
    own = _module_name(path)
    bases = ["ctxmode"]
    package = own if path.name == "__init__.py" else own.rsplit(".", 1)[0]
    while package != "ctxmode":
        bases.append(package)
        package = package.rsplit(".", 1)[0]
    for base in ["", *bases]:
        for cut in range(len(parts), 0, -1):
            candidate = ".".join(filter(None, [base, *parts[:cut]]))
            if candidate.split(".")[0] == "ctxmode" and _is_module(candidate):
                if _lookup(importlib.import_module(candidate), parts[cut:]):
                    return True
                break
    bound = {**vars(builtins), **vars(importlib.import_module(own))}
    if parts[0] in bound:
        return _lookup(bound[parts[0]], parts[1:])
    if parts[0] in _CLASSES:
        return _lookup(importlib.import_module(_CLASSES[parts[0]]), parts)
    if parts[0] != "ctxmode" and _importable(parts[0]):
        for cut in range(len(parts), 0, -1):
            if _importable(".".join(parts[:cut])):
                return _lookup(importlib.import_module(".".join(parts[:cut])), parts[cut:])
    return False if _ours(parts[0]) else None


def test_dotted_names_in_docstrings_resolve() -> None:
    """``mcp.calls.body``, ``Store.conn``, ``search.engine.MIN_BUDGET`` written in a docstring
    or a ``#:`` comment name a module or attribute that exists: a moved or renamed module
    leaves no stale pointer behind."""
    stale = []
    for path in _all_files():
        for line, text in _doc_texts(path):
            for match in _DOTTED.finditer(text):
                if _resolves(match.group(1), path) is False:
                    stale.append(f"{path.relative_to(PACKAGE)}:{line}: {match.group(1)}")
    assert not stale, "\n".join(stale)


def test_the_docstring_check_catches_a_stale_name() -> None:
    """A name of the old flat layout, a missing attribute and a moved module are caught; a
    file name, a column and a name of another library are not names to check."""
    engine = PACKAGE / "search" / "engine.py"
    front = PACKAGE / "mcp" / "front.py"
    assert _resolves("search_query.parse", engine) is False
    assert _resolves("query.no_such_function", engine) is False
    assert _resolves("mcp.listing.load", front) is False
    assert _resolves("query.parse", engine) is True
    assert _resolves("mcp.calls.body", front) is True
    assert _resolves("Store.conn", front) is True
    assert _resolves("json.loads", front) is True
    assert _resolves("hooks.log", front) is None
    assert _resolves("chunks.path", front) is None
