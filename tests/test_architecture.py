"""Import direction: the core imports no interface code; only config.py reads the environment."""

from __future__ import annotations

import ast
from pathlib import Path

import ctxmode

PACKAGE = Path(ctxmode.__file__).parent
INTERFACES = ("ctxmode.cli", "ctxmode.hooks", "ctxmode.web", "ctxmode.mcp_")
HEAVY = ("click", "rich", "mcp", "pydantic", "starlette", "uvicorn", "jinja2", "httpx")


def _core_modules() -> list[Path]:
    out = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(("cli/", "hooks/", "web/", "mcp_")):
            continue
        if rel in {"_entry.py", "__main__.py"}:
            continue
        out.append(path)
    return out


def _imports(path: Path, top_level_only: bool) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    names: list[str] = []
    for node in nodes:
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
        elif isinstance(node, ast.If) and top_level_only:
            continue  # TYPE_CHECKING blocks
    return names


def test_core_never_imports_interfaces() -> None:
    offenders = []
    for path in _core_modules():
        for name in _imports(path, top_level_only=False):
            if name.startswith(INTERFACES):
                offenders.append(f"{path.name}: {name}")
    assert not offenders, offenders


def test_core_imports_no_heavy_library_at_module_level() -> None:
    offenders = []
    for path in _core_modules():
        for name in _imports(path, top_level_only=True):
            if name.split(".")[0] in HEAVY:
                offenders.append(f"{path.name}: {name}")
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
    offenders = [
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if path.name != "config.py" and _reads_environment(path)
    ]
    # Subprocess launchers may pass an environment through; they must not read settings from it.
    allowed = {"sandbox.py", "cli/serve.py", "hooks/runner.py"}
    assert set(offenders) <= allowed, offenders


def test_interfaces_do_not_import_each_other() -> None:
    groups = {"cli/": "ctxmode.cli", "web/": "ctxmode.web", "hooks/": "ctxmode.hooks"}
    # The CLI is the composition root of `ctxmode ui` and `hook`: it may start them, no more.
    allowed = {("cli/web.py", "ctxmode.web"), ("cli/sessions.py", "ctxmode.hooks")}
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        own = next((g for g in groups if rel.startswith(g)), None)
        if own is None:
            continue
        for name in _imports(path, top_level_only=False):
            for group, module in groups.items():
                if group != own and name.startswith(module) and (rel, module) not in allowed:
                    offenders.append(f"{rel}: {name}")
    assert not offenders, offenders
