"""Installers: merge into real config files in a temp project and home, idempotently, reversibly."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from conftest import run_cli
from ctxmode.agents import install as inst
from ctxmode.agents import jsonc
from ctxmode.core.errors import InvalidInput

PYTHON = os.path.abspath(sys.executable)

#: (hooks file, MCP file) relative to the project (scope project) or home (scope user).
FILES: dict[str, dict[str, tuple[str, str]]] = {
    "claude-code": {
        "project": (".claude/settings.local.json", ".mcp.json"),
        "user": (".claude/settings.json", ".claude.json"),
    },
    "gemini-cli": {
        "project": (".gemini/settings.json", ".gemini/settings.json"),
        "user": (".gemini/settings.json", ".gemini/settings.json"),
    },
    "codex": {
        "project": (".codex/hooks.json", ".codex/config.toml"),
        "user": (".codex/hooks.json", ".codex/config.toml"),
    },
    "cursor": {
        "project": (".cursor/hooks.json", ".cursor/mcp.json"),
        "user": (".cursor/hooks.json", ".cursor/mcp.json"),
    },
    "vscode": {
        "project": (".github/hooks/ctxmode.json", ".vscode/mcp.json"),
        "user": (".copilot/hooks/ctxmode.json", ".config/Code/User/mcp.json"),
    },
    "opencode": {
        "project": (".opencode/plugins/ctxmode.js", "opencode.json"),
        "user": (".config/opencode/plugins/ctxmode.js", ".config/opencode/opencode.json"),
    },
    "qwen-code": {
        "project": (".qwen/settings.json", ".qwen/settings.json"),
        "user": (".qwen/settings.json", ".qwen/settings.json"),
    },
    "copilot-cli": {
        "project": (".github/copilot/settings.local.json", ".github/mcp.json"),
        "user": (".copilot/settings.json", ".copilot/mcp-config.json"),
    },
    "kimi-code": {"user": (".kimi-code/config.toml", ".kimi-code/mcp.json")},
}
#: Agents with project-scope hooks (Kimi Code reads its user config only).
PROJECT_AGENTS = [a for a in inst.AGENTS if a != "kimi-code"]
KIMI_TOML = """# my kimi config
default_model = "mock"

[[hooks]]  # mine
event = "PostToolUse"
command = "echo foreign-hook"

[models.mock]
provider = "mock"
model = "m"
max_context_size = 128000
"""

#: The agent's own event names that must carry a ctxmode hook.
EVENTS = {
    "claude-code": {
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "UserPromptSubmit",
        "PreCompact",
        "SessionStart",
        "Stop",
        "SessionEnd",
    },
    "gemini-cli": {
        "BeforeTool",
        "AfterTool",
        "BeforeAgent",
        "AfterAgent",
        "PreCompress",
        "SessionStart",
        "SessionEnd",
    },
    "codex": {
        "PreToolUse",
        "PostToolUse",
        "UserPromptSubmit",
        "PreCompact",
        "SessionStart",
        "Stop",
        "SessionEnd",
    },
    "cursor": {
        "afterShellExecution",
        "afterFileEdit",
        "afterMCPExecution",
        "postToolUseFailure",
        "beforeSubmitPrompt",
        "preCompact",
        "sessionStart",
        "stop",
        "sessionEnd",
    },
    "vscode": {
        "PreToolUse",
        "PostToolUse",
        "UserPromptSubmit",
        "PreCompact",
        "SessionStart",
        "Stop",
    },
    "qwen-code": {
        "PostToolUse",
        "PostToolUseFailure",
        "UserPromptSubmit",
        "PreCompact",
        "SessionStart",
        "Stop",
        "SessionEnd",
    },
    "copilot-cli": {
        "PreToolUse",
        "PostToolUse",
        "PostToolUseFailure",
        "UserPromptSubmit",
        "PreCompact",
        "SessionStart",
        "Stop",
        "SessionEnd",
    },
    "kimi-code": {
        "PostToolUse",
        "PostToolUseFailure",
        "UserPromptSubmit",
        "PreCompact",
        "SessionStart",
        "Stop",
        "SessionEnd",
    },
}
NESTED = {"claude-code", "gemini-cli", "codex", "qwen-code"}
SERVERS_KEY = {
    "claude-code": "mcpServers",
    "gemini-cli": "mcpServers",
    "qwen-code": "mcpServers",
    "copilot-cli": "mcpServers",
    "kimi-code": "mcpServers",
    "cursor": "mcpServers",
    "vscode": "servers",
    "opencode": "mcp",
}
FOREIGN_CMD = "echo foreign-hook"
CODEX_TOML = """# my codex config
model = "o3"

[mcp_servers.other]  # keep me
command = "node"
args = ["srv.js"]

# profiles below
[profiles.fast]
model = "o4-mini"
"""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"  # created and exported as $HOME by conftest


def _base(scope: str, project: Path, home: Path) -> Path:
    return project if scope == "project" else home


def _dump(data: Any) -> str:
    return json.dumps(data, indent=2) + "\n"


def _seed(agent: str, scope: str, project: Path, home: Path) -> dict[Path, bytes]:
    """Write foreign hooks and servers where ctxmode will install; return the files' bytes."""
    base = _base(scope, project, home)
    hooks_rel, mcp_rel = FILES[agent][scope]
    files: dict[Path, str] = {}
    foreign_server = {"command": "node", "args": ["srv.js"]}
    if agent in NESTED:
        event = {"gemini-cli": "AfterTool"}.get(agent, "PostToolUse")
        group = {"matcher": "Bash", "hooks": [{"type": "command", "command": FOREIGN_CMD}]}
        files[base / hooks_rel] = _dump(
            {"model": "x", "hooks": {event: [group], "Notification": [group]}}
        )
    elif agent == "cursor":
        files[base / hooks_rel] = _dump(
            {"version": 1, "hooks": {"afterShellExecution": [{"command": FOREIGN_CMD}]}}
        )
    elif agent == "kimi-code":
        files[base / hooks_rel] = KIMI_TOML
    elif agent in ("vscode", "copilot-cli"):
        files[base / hooks_rel] = _dump(
            {"hooks": {"PostToolUse": [{"type": "command", "command": FOREIGN_CMD}]}}
        )
    else:  # opencode: foreign plugins live in their own files next to ours
        files[(base / hooks_rel).with_name("other.js")] = "export const Other = async () => ({});\n"
    if agent == "codex":
        files[base / mcp_rel] = CODEX_TOML
    elif agent == "opencode":
        files[base / mcp_rel] = _dump(
            {"$schema": "https://opencode.ai/config.json", "mcp": {"other": foreign_server}}
        )
    else:
        path = base / mcp_rel
        existing = json.loads(files[path]) if path in files else {"theme": "dark"}
        existing[SERVERS_KEY[agent]] = {"other": foreign_server}
        files[path] = _dump(existing)
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return {p: p.read_bytes() for p in files}


def _tree(*roots: Path) -> dict[str, bytes]:
    out = {}
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file():
                out[str(path)] = path.read_bytes()
    return out


def _load(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    return tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)


def _our_commands(agent: str, doc: dict[str, Any]) -> dict[str, list[str]]:
    """Event -> command lines of ctxmode's hook handlers."""
    out: dict[str, list[str]] = {}
    if agent == "kimi-code":
        for table in doc.get("hooks", []):
            if "-m ctxmode hook" in table["command"]:
                out.setdefault(table["event"], []).append(table["command"])
        return out
    for event, entries in doc.get("hooks", {}).items():
        handlers = []
        for entry in entries:
            handlers += entry["hooks"] if agent in NESTED else [entry]
        cmds = [h["command"] for h in handlers if "-m ctxmode hook" in h.get("command", "")]
        if cmds:
            out[event] = cmds
    return out


def _foreign_commands(doc: dict[str, Any], agent: str) -> list[str]:
    if agent == "kimi-code":
        return [t["command"] for t in doc.get("hooks", []) if t["command"] == FOREIGN_CMD]
    found = []
    for entries in doc.get("hooks", {}).values():
        for entry in entries:
            for h in entry["hooks"] if agent in NESTED else [entry]:
                if h.get("command") == FOREIGN_CMD:
                    found.append(h["command"])
    return found


def _server(agent: str, path: Path, name: str) -> Any:
    doc = _load(path)
    if agent == "codex":
        return doc.get("mcp_servers", {}).get(name)
    return doc.get(SERVERS_KEY[agent], {}).get(name)


def _assert_installed(agent: str, scope: str, project: Path, home: Path, python: str) -> None:
    base = _base(scope, project, home)
    hooks_rel, mcp_rel = FILES[agent][scope]
    hooks_path, mcp_path = base / hooks_rel, base / mcp_rel
    if agent == "opencode":
        text = hooks_path.read_text(encoding="utf-8")
        assert f"const PYTHON = {json.dumps(python)};" in text
        assert '"-m", "ctxmode", "hook"' in text
    else:
        commands = _our_commands(agent, _load(hooks_path))
        assert set(commands) == EVENTS[agent]
        for event, cmds in commands.items():
            assert len(cmds) == 1, (event, cmds)  # never duplicated
            argv = shlex.split(cmds[0])
            assert argv[0] == python and os.path.isabs(argv[0])
            assert argv[1:4] == ["-m", "ctxmode", "hook"]
            assert argv[-2:] == ["--agent", agent]
        assert _foreign_commands(_load(hooks_path), agent), "foreign hook lost"
    server = _server(agent, mcp_path, "ctxmode")
    if agent == "opencode":
        assert server["command"] == [python, "-m", "ctxmode", "serve"]
    elif agent == "claude-code" and scope == "project":
        # .mcp.json, which teams commit, names nothing of this machine; this machine's own
        # entry is the project's local scope in ~/.claude.json.
        assert server == {"type": "stdio", "command": "ctxmode", "args": ["serve"]}
        projects = _load(home / ".claude.json")["projects"]
        local = projects[os.path.realpath(project)]["mcpServers"]["ctxmode"]
        assert local["command"] == python and local["args"] == ["-m", "ctxmode", "serve"]
    else:
        assert server["command"] == python
        assert server["args"] == ["-m", "ctxmode", "serve"]
    assert _server(agent, mcp_path, "other") is not None, "foreign server lost"


AGENT_SCOPES = [(a, s) for a in inst.AGENTS for s in inst.SCOPES if s in FILES[a]]


@pytest.mark.parametrize(("agent", "scope"), AGENT_SCOPES)
def test_install_merges_is_idempotent_and_uninstall_restores(
    agent: str, scope: str, project: Path, home: Path
) -> None:
    seeded = _seed(agent, scope, project, home)

    first = inst.install(agent, scope=scope, project_root=project, home=home)
    assert first.agent == agent and first.scope == scope and not first.dry_run
    assert {c.action for c in first.changes} <= {"create", "update"}
    assert first.changes
    _assert_installed(agent, scope, project, home, PYTHON)
    for path in seeded:
        if path.name != "other.js":
            assert any(c.path == str(path) for c in first.changes), path

    before = _tree(project, home)
    second = inst.install(agent, scope=scope, project_root=project, home=home)
    assert [c.action for c in second.changes] == ["unchanged"] * len(first.changes)
    assert _tree(project, home) == before

    removed = inst.uninstall(agent, scope=scope, project_root=project, home=home)
    assert {c.action for c in removed.changes} <= {"update", "remove"}
    # Every seeded file is back byte for byte; files install created are gone.
    for path, data in seeded.items():
        assert path.read_bytes() == data, path
    created = {Path(c.path) for c in first.changes if c.action == "create"}
    assert all(not p.exists() for p in created)
    again = inst.uninstall(agent, scope=scope, project_root=project, home=home)
    assert again.changes == ()


@pytest.mark.parametrize("agent", PROJECT_AGENTS)
def test_install_into_empty_project_then_uninstall_leaves_nothing(
    agent: str, bare_project: Path, home: Path
) -> None:
    project = bare_project
    result = inst.install(agent, project_root=project, home=home)
    assert all(c.action == "create" for c in result.changes)
    inst.uninstall(agent, project_root=project, home=home)
    leftovers = [p for p in project.rglob("*") if p.is_file()]
    assert leftovers == []


@pytest.mark.parametrize("agent", PROJECT_AGENTS)
def test_dry_run_writes_nothing(agent: str, project: Path, home: Path) -> None:
    _seed(agent, "project", project, home)
    before = _tree(project, home)
    result = inst.install(agent, project_root=project, home=home, dry_run=True)
    assert result.dry_run
    assert result.changes and {c.action for c in result.changes} <= {"create", "update"}
    assert _tree(project, home) == before

    inst.install(agent, project_root=project, home=home)
    installed = _tree(project, home)
    preview = inst.uninstall(agent, project_root=project, home=home, dry_run=True)
    assert preview.changes and all(c.action in {"update", "remove"} for c in preview.changes)
    assert _tree(project, home) == installed


@pytest.mark.parametrize("agent", PROJECT_AGENTS)
def test_malformed_config_is_refused_and_nothing_changes(
    agent: str, project: Path, home: Path
) -> None:
    hooks_rel, mcp_rel = FILES[agent]["project"]
    bad = project / (mcp_rel if agent == "opencode" else hooks_rel)
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text('{"hooks": {', encoding="utf-8")
    if agent == "codex":  # also a broken TOML file on its own
        (project / mcp_rel).write_text("[mcp_servers.other\n", encoding="utf-8")
    before = _tree(project, home)
    with pytest.raises(InvalidInput, match="not valid") as info:
        inst.install(agent, project_root=project, home=home)
    assert str(bad) in str(info.value) or str(project / mcp_rel) in str(info.value)
    assert _tree(project, home) == before
    with pytest.raises(InvalidInput):
        inst.uninstall(agent, project_root=project, home=home)
    assert _tree(project, home) == before


def test_broken_codex_toml_alone_is_refused(project: Path, home: Path) -> None:
    path = project / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text('model = "o3\n', encoding="utf-8")
    with pytest.raises(InvalidInput, match="not valid TOML"):
        inst.install("codex", project_root=project, home=home)
    assert path.read_text(encoding="utf-8") == 'model = "o3\n'
    assert not (project / ".codex" / "hooks.json").exists()


def test_json_with_comments_keeps_them_through_install_and_uninstall(
    project: Path, home: Path
) -> None:
    path = project / ".vscode" / "mcp.json"
    path.parent.mkdir(parents=True)
    text = (
        '{\n  // servers this team shares\n  "servers": {},\n'
        '  /* inputs come later */ "inputs": [], // keep me\n}\n'
    )
    path.write_text(text, encoding="utf-8")
    inst.install("vscode", project_root=project, home=home)
    installed = path.read_text(encoding="utf-8")
    for comment in ("// servers this team shares", "/* inputs come later */", "// keep me"):
        assert comment in installed
    data = jsonc.loads(installed)
    assert set(data["servers"]) == {"ctxmode"} and data["inputs"] == []
    assert data["servers"]["ctxmode"]["command"] == str(Path(sys.executable))
    inst.install("vscode", project_root=project, home=home)  # idempotent: same bytes
    assert path.read_text(encoding="utf-8") == installed
    inst.uninstall("vscode", project_root=project, home=home)
    left = path.read_text(encoding="utf-8")  # comments kept, so the file is not deleted
    assert "// keep me" in left and jsonc.loads(left) == {"inputs": []}


def test_json_entry_with_comments_inside_is_refused_unchanged(project: Path, home: Path) -> None:
    path = project / ".vscode" / "mcp.json"
    path.parent.mkdir(parents=True)
    text = '{\n  "servers": {\n    // my own server\n    "mine": {"command": "x"}\n  },\n}\n'
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInput, match="'servers' entry has comments"):
        inst.install("vscode", project_root=project, home=home)
    assert path.read_text(encoding="utf-8") == text
    assert not (project / ".github").exists()


def _other_python(tmp_path: Path) -> str:
    """A second real interpreter path (a venv-style symlink to this one)."""
    link = tmp_path / "other-venv" / "bin" / "python"
    link.parent.mkdir(parents=True)
    link.symlink_to(PYTHON)
    return str(link)


@pytest.mark.parametrize("agent", PROJECT_AGENTS)
def test_reinstall_with_another_interpreter_updates_in_place(
    agent: str, project: Path, home: Path, tmp_path: Path
) -> None:
    _seed(agent, "project", project, home)
    inst.install(agent, project_root=project, home=home)
    other = _other_python(tmp_path)
    result = inst.install(agent, project_root=project, home=home, python=other)
    actions = {Path(c.path).name: c.action for c in result.changes}
    if agent == "claude-code":  # the committed file does not name an interpreter
        assert actions.pop(".mcp.json") == "unchanged"
    assert set(actions.values()) == {"update"}
    _assert_installed(agent, "project", project, home, other)  # one handler per event
    st = inst.status(agent, project_root=project, home=home)
    assert st.interpreter == other  # the symlink itself, not its target


def test_position_of_our_hook_group_is_kept(project: Path, home: Path) -> None:
    path = project / ".claude" / "settings.local.json"
    inst.install("claude-code", project_root=project, home=home)
    doc = json.loads(path.read_text())
    doc["hooks"]["Stop"].append({"hooks": [{"type": "command", "command": "echo after"}]})
    path.write_text(json.dumps(doc, indent=4) + "\n")
    inst.install("claude-code", project_root=project, home=home, python=_other_python(project))
    stop = json.loads(path.read_text())["hooks"]["Stop"]
    assert "-m ctxmode hook stop" in stop[0]["hooks"][0]["command"]
    assert stop[1]["hooks"][0]["command"] == "echo after"
    assert path.read_text().startswith('{\n    "hooks"')  # 4-space indent kept


def test_hand_formatted_file_keeps_its_bytes_when_nothing_changes(
    project: Path, home: Path
) -> None:
    inst.install("cursor", project_root=project, home=home)
    path = project / ".cursor" / "hooks.json"
    odd = json.dumps(json.loads(path.read_text()), separators=(" ,", " : "))  # one odd line
    path.write_text(odd, encoding="utf-8")
    result = inst.install("cursor", project_root=project, home=home)
    assert {c.action for c in result.changes} == {"unchanged"}
    assert path.read_text(encoding="utf-8") == odd


def test_claude_project_install_moves_stale_hooks_out_of_shared_settings(
    project: Path, home: Path
) -> None:
    shared = project / ".claude" / "settings.json"
    shared.parent.mkdir(parents=True)
    stale = {"type": "command", "command": "/old/python -m ctxmode hook stop --agent claude-code"}
    mine = {"type": "command", "command": FOREIGN_CMD}
    shared.write_text(_dump({"hooks": {"Stop": [{"hooks": [stale, mine]}]}}))
    result = inst.install("claude-code", project_root=project, home=home)
    assert any(c.path == str(shared) and c.action == "update" for c in result.changes)
    assert json.loads(shared.read_text()) == {"hooks": {"Stop": [{"hooks": [mine]}]}}
    st = inst.status("claude-code", project_root=project, home=home)
    assert st.hooks_installed and st.problems == ()


def test_pyenv_shim_is_refused(bare_project: Path, home: Path) -> None:
    project = bare_project
    with pytest.raises(InvalidInput, match="pyenv shim"):
        inst.install(
            "claude-code", project_root=project, home=home, python="/h/.pyenv/shims/python"
        )
    assert _tree(project) == {}


def test_unknown_agent_and_scope(project: Path, home: Path) -> None:
    with pytest.raises(InvalidInput, match="unknown agent"):
        inst.install("emacs", project_root=project, home=home)
    with pytest.raises(InvalidInput, match="unknown scope"):
        inst.install("codex", scope="global", project_root=project, home=home)
    assert inst.install("claude", project_root=project, home=home).agent == "claude-code"


def test_codex_keeps_user_keys_in_our_table_and_comments(project: Path, home: Path) -> None:
    path = project / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(
        CODEX_TOML + '\n[mcp_servers.ctxmode]\ncommand = "old"\n\n[mcp_servers.ctxmode.env]\n'
        'K = "v"\n\n# trailing note\n[tui]\nx = 1\n',
        encoding="utf-8",
    )
    inst.install("codex", project_root=project, home=home)
    text = path.read_text(encoding="utf-8")
    doc = tomllib.loads(text)
    assert doc["mcp_servers"]["ctxmode"]["command"] == PYTHON
    assert doc["mcp_servers"]["ctxmode"]["env"] == {"K": "v"}
    assert doc["tui"] == {"x": 1} and doc["profiles"]["fast"]["model"] == "o4-mini"
    assert "# my codex config" in text and "# trailing note" in text and "# keep me" in text
    assert text.count("[mcp_servers.ctxmode]") == 1


def test_codex_inline_server_table_is_refused(project: Path, home: Path) -> None:
    path = project / ".codex" / "config.toml"
    path.parent.mkdir(parents=True)
    text = 'mcp_servers = { ctxmode = { command = "x" } }\n'
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInput, match="by hand"):
        inst.install("codex", project_root=project, home=home)
    assert path.read_text(encoding="utf-8") == text


def test_foreign_plugin_file_is_not_overwritten(project: Path, home: Path) -> None:
    path = project / ".opencode" / "plugins" / "ctxmode.js"
    path.parent.mkdir(parents=True)
    path.write_text("// mine\n", encoding="utf-8")
    with pytest.raises(InvalidInput, match="not written by ctxmode"):
        inst.install("opencode", project_root=project, home=home)
    assert path.read_text(encoding="utf-8") == "// mine\n"


# --- status -----------------------------------------------------------------------------------


@pytest.mark.parametrize("agent", inst.AGENTS)
def test_status_before_and_after(agent: str, project: Path, home: Path) -> None:
    empty = inst.status(agent, project_root=project, home=home)
    assert empty == inst.AgentStatus(agent, False, False, (), None, False, ())
    inst.install(agent, scope="user", project_root=project, home=home)
    st = inst.status(agent, project_root=project, home=home)
    assert st.hooks_installed and st.mcp_installed
    assert st.interpreter == PYTHON and st.interpreter_exists
    if agent == "codex":  # installed, but Codex skips hooks nobody trusted
        (problem,) = st.problems
        assert "not trusted by Codex" in problem and "ctxmode install codex --trust" in problem
        inst.install(agent, scope="user", project_root=project, home=home, trust=True)
        st = inst.status(agent, project_root=project, home=home)
    assert st.problems == ()
    hooks_rel, mcp_rel = FILES[agent]["user"]
    assert set(st.config_paths) == {str(home / hooks_rel), str(home / mcp_rel)}
    data = st.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert set(data) == {
        "agent",
        "hooks_installed",
        "mcp_installed",
        "config_paths",
        "interpreter",
        "interpreter_exists",
        "problems",
        "hook_kind",
    }
    assert data["hook_kind"] == "command"  # no Claude Code found (conftest): command hooks


def test_status_reports_partial_hooks_missing_interpreter_and_bad_files(
    project: Path, home: Path, tmp_path: Path
) -> None:
    other = _other_python(tmp_path)
    inst.install("claude-code", project_root=project, home=home, python=other)
    path = project / ".claude" / "settings.local.json"
    doc = json.loads(path.read_text())
    del doc["hooks"]["PreCompact"]
    path.write_text(json.dumps(doc))
    os.unlink(other)
    st = inst.status("claude-code", project_root=project, home=home)
    assert not st.hooks_installed and st.mcp_installed
    assert st.interpreter == other and not st.interpreter_exists
    assert any("PreCompact" in p for p in st.problems)
    assert any("does not exist" in p for p in st.problems)

    (home / ".gemini").mkdir()
    (home / ".gemini" / "settings.json").write_text("{oops")
    gem = inst.status("gemini-cli", project_root=project, home=home)
    assert not gem.hooks_installed and any("not valid JSON" in p for p in gem.problems)


def test_status_flags_vscode_running_claude_hooks_too(project: Path, home: Path) -> None:
    inst.install("claude-code", project_root=project, home=home)
    inst.install("vscode", project_root=project, home=home)
    st = inst.status("vscode", project_root=project, home=home)
    assert st.hooks_installed and any("twice" in p for p in st.problems)


def test_claude_code_alone_does_not_warn_about_vscode(project: Path, home: Path) -> None:
    inst.install("claude-code", project_root=project, home=home)
    st = inst.status("vscode", project_root=project, home=home)
    assert not st.hooks_installed and st.problems == ()


# --- the installed commands really run --------------------------------------------------------


def test_installed_claude_hook_commands_exit_zero(project: Path, home: Path) -> None:
    inst.install("claude-code", project_root=project, home=home)
    doc = json.loads((project / ".claude" / "settings.local.json").read_text())
    commands = _our_commands("claude-code", doc)
    payload = {
        "session_id": "s-1",
        "transcript_path": str(project / "t.jsonl"),
        "cwd": str(project),
        "hook_event_name": "PostToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_response": {"stdout": "", "stderr": ""},
    }
    for event, (command,) in commands.items():
        payload["hook_event_name"] = event
        proc = subprocess.run(
            ["/bin/sh", "-c", command],
            input=json.dumps(payload),
            cwd=project,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0, (event, proc.stderr)
        assert proc.stdout.strip() == "" or isinstance(json.loads(proc.stdout), dict)


#: What OpenCode 1.18.33 handed its plugins in the e2e run (``tests/e2e/refresh_fixtures.py``).
PLUGIN_FIXTURES = Path(__file__).resolve().parent / "fixtures" / "opencode-plugin"


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")
def test_opencode_plugin_forwards_events(project: Path, home: Path, tmp_path: Path) -> None:
    log = tmp_path / "calls.log"
    fake = tmp_path / "fakepy" / "bin" / "python"
    fake.parent.mkdir(parents=True)
    # A stand-in interpreter at the process boundary: records argv and stdin, answers like the
    # real hook runner (context for session-start, post-tool-use and user-prompt-submit).
    answer = '{"hookSpecificOutput":{"additionalContext":"%s"}}'
    fake.write_text(
        "#!/bin/sh\n"
        f'printf "ARGS %s\\n" "$*" >> "{log}"\n'
        f'cat >> "{log}"; echo >> "{log}"\n'
        f"case \"$4\" in session-start) echo '{answer % 'SNAP'}';;\n"
        f"  post-tool-use) echo '{answer % 'LINKED'}';;\n"
        f"  user-prompt-submit) echo '{answer % 'HINT'}';;\n"
        "esac\n"
    )
    fake.chmod(0o755)
    inst.install("opencode", project_root=project, home=home, python=str(fake))
    plugin = tmp_path / "plugin.mjs"
    shutil.copy(project / ".opencode" / "plugins" / "ctxmode.js", plugin)
    driver = tmp_path / "driver.mjs"
    # OpenCode's real objects, in the order of the e2e session: a new session, a failing
    # pytest run, an MCP call, a prompt, a reply and the idle after it, a compaction and the
    # summary it writes, then a later reply.
    names = [
        "event.session.created",
        "tool.execute.after.bash.pytest-failed",
        "tool.execute.after.ctxmode_write_context",
        "chat.message",
        "experimental.text.complete",
        "event.session.idle",
        "experimental.session.compacting",
        "experimental.text.complete.summary",
        "experimental.text.complete",
    ]
    driver.write_text(
        'import { readFileSync } from "node:fs";\n'
        f"import {{ CtxmodePlugin }} from {json.dumps(str(plugin))};\n"
        f"const hooks = await CtxmodePlugin({{ directory: {json.dumps(str(project))} }});\n"
        f"const dir = {json.dumps(str(PLUGIN_FIXTURES))};\n"
        "const seen = {};\n"
        f"for (const name of {json.dumps(names)}) {{\n"
        "  const fx = JSON.parse(readFileSync(`${dir}/${name}.json`));\n"
        '  if (fx.hook === "event") await hooks.event(fx.input);\n'
        "  else await hooks[fx.hook](fx.input, fx.output);\n"
        "  (seen[fx.hook] ??= []).push(fx.output);\n"
        "}\n"
        "console.log(JSON.stringify(seen));\n"
    )
    proc = subprocess.run(
        ["node", str(driver)], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout)
    bash_out, mcp_out = seen["tool.execute.after"]
    # What the post-tool hook answered follows a built-in tool's output (never an MCP result).
    assert bash_out["output"].endswith("\n\nLINKED")
    assert "FAILED tests/test_refresh.py" in bash_out["output"]
    assert "output" not in mcp_out
    # The startup brief and the prompt hook's answer follow the user's words, once.
    ((part,),) = [m["parts"] for m in seen["chat.message"]]
    assert part["text"] == '"Fix the refresh-token rotation in auth/"\n\nSNAP\nHINT'
    # The snapshot rides on the compaction's summary, once: not on the replies.
    reply, summary, later = (o["text"] for o in seen["experimental.text.complete"])
    assert summary.endswith("</summary>\n\nSNAP") and "SNAP" not in reply + later
    calls = log.read_text()
    for event in ("post-tool-use", "user-prompt-submit", "pre-compact", "session-start", "stop"):
        assert f"ARGS -m ctxmode hook {event} --agent opencode" in calls
    payloads = [json.loads(line) for line in calls.splitlines() if line.startswith("{")]
    bash, mcp = (p for p in payloads if p.get("hook_event_name") == "PostToolUse")
    assert bash["tool_name"] == "bash" and bash["exit_code"] == 1
    assert "FAILED tests/test_refresh.py::test_rotation" in bash["tool_response"]
    assert bash["cwd"] == str(project) and bash["session_id"].startswith("ses_")
    # An MCP tool's result is the MCP result itself (no ``output``): forwarded whole.
    assert mcp["tool_name"] == "ctxmode_write_context" and "exit_code" not in mcp
    assert mcp["tool_response"]["structuredContent"]["id"] == 1
    (prompt,) = [p["prompt"] for p in payloads if p["hook_event_name"] == "UserPromptSubmit"]
    assert prompt == '"Fix the refresh-token rotation in auth/"'  # as OpenCode sent it
    # session.idle has no text: the Stop hook gets the reply OpenCode completed before it.
    (stop,) = [p for p in payloads if p["hook_event_name"] == "Stop"]
    assert stop["last_assistant_message"] == reply


# --- CLI --------------------------------------------------------------------------------------


def test_cli_install_agents_uninstall(project: Path, home: Path) -> None:
    proc = run_cli("install", "claude-code", "--dry-run", "--json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["dry_run"] is True
    assert not (project / ".mcp.json").exists()

    proc = run_cli("install", "claude-code", "--json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["agent"] == "claude-code" and result["scope"] == "project"
    assert {c["action"] for c in result["changes"]} == {"create"}
    server = json.loads((project / ".mcp.json").read_text())["mcpServers"]["ctxmode"]
    assert server["command"] == "ctxmode" and server["args"] == ["serve"]
    projects = json.loads((home / ".claude.json").read_text())["projects"]
    local = projects[os.path.realpath(project)]["mcpServers"]["ctxmode"]
    assert os.path.isabs(local["command"]) and "/.pyenv/shims/" not in local["command"]

    proc = run_cli("install", "claude-code", cwd=project)
    assert proc.returncode == 0 and "unchanged" in proc.stdout

    proc = run_cli("agents", "--json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    statuses = {s["agent"]: s for s in json.loads(proc.stdout)}
    assert set(statuses) == set(inst.AGENTS)
    assert statuses["claude-code"]["hooks_installed"] and statuses["claude-code"]["mcp_installed"]
    assert not statuses["codex"]["hooks_installed"]

    proc = run_cli("uninstall", "claude-code", "--json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert {c["action"] for c in json.loads(proc.stdout)["changes"]} == {"remove"}
    assert not (project / ".mcp.json").exists()


def test_cli_user_scope_and_errors(project: Path, home: Path) -> None:
    proc = run_cli("install", "gemini-cli", "--scope", "user", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (home / ".gemini" / "settings.json").exists()

    (project / ".cursor").mkdir()
    (project / ".cursor" / "mcp.json").write_text("not json")
    proc = run_cli("install", "cursor", "--json", cwd=project)
    assert proc.returncode == 1
    assert "not valid JSON" in proc.stderr and "Error:" in proc.stderr
    assert "not valid JSON" in json.loads(proc.stdout)["error"]
    assert not (project / ".cursor" / "hooks.json").exists()

    proc = run_cli("install", "nano", cwd=project)
    assert proc.returncode == 1 and "unknown agent" in proc.stderr


def test_reinstall_narrows_an_older_claude_pre_tool_use_hook_and_keeps_the_users(
    project: Path, home: Path
) -> None:
    """Claude Code's PreToolUse runs for the edit tools only (knowledge linked to the file); an
    older all-tools group of ours is replaced, the user's own group is kept."""
    inst.install("claude-code", project_root=project, home=home)
    path = project / ".claude" / "settings.local.json"
    doc = json.loads(path.read_text(encoding="utf-8"))
    [group] = doc["hooks"]["PreToolUse"]
    assert group["matcher"] == "Edit|Write|MultiEdit|NotebookEdit"
    ours = group["hooks"][0]["command"]
    assert ours.endswith("hook pre-tool-use --agent claude-code")
    users = {"matcher": "Bash", "hooks": [{"type": "command", "command": "./guard.sh"}]}
    doc["hooks"]["PreToolUse"] = [{"hooks": [{"type": "command", "command": ours}]}, users]
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    inst.install("claude-code", project_root=project, home=home)
    after = json.loads(path.read_text(encoding="utf-8"))
    assert after["hooks"]["PreToolUse"] == [group, users]


def test_qwen_code_reports_what_stops_its_hooks(project: Path, home: Path) -> None:
    inst.install("qwen-code", project_root=project, home=home)
    assert inst.status("qwen-code", project_root=project, home=home).problems == ()
    settings = home / ".qwen" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"security": {"folderTrust": {"enabled": True}}}))
    (problem,) = inst.status("qwen-code", project_root=project, home=home).problems
    assert "does not trust" in problem and "/permissions" in problem
    (home / ".qwen" / "trustedFolders.json").write_text(
        json.dumps({os.path.realpath(project): "TRUST_FOLDER"})
    )
    assert inst.status("qwen-code", project_root=project, home=home).problems == ()
    settings.write_text(json.dumps({"disableAllHooks": True}))
    (problem,) = inst.status("qwen-code", project_root=project, home=home).problems
    assert "disableAllHooks" in problem


def test_copilot_cli_trust_is_recorded_where_copilot_reads_it(project: Path, home: Path) -> None:
    config_json = home / ".copilot" / "config.json"
    config_json.parent.mkdir(parents=True)
    managed = '// This file is managed automatically.\n{\n  "firstLaunchAt": "2026-03-11"\n}\n'
    config_json.write_text(managed)
    plain = inst.install("copilot-cli", project_root=project, home=home)
    assert any("--trust" in c.summary for c in plain.changes)
    (problem,) = inst.status("copilot-cli", project_root=project, home=home).problems
    assert "does not trust" in problem
    trusted = inst.install("copilot-cli", project_root=project, home=home, trust=True)
    assert any(c.path == str(config_json) for c in trusted.changes)
    text = config_json.read_text()
    assert text.startswith("// This file is managed automatically.")  # its comment kept
    assert jsonc.loads(text) == {"firstLaunchAt": "2026-03-11", "trustedFolders": [str(project)]}
    assert inst.status("copilot-cli", project_root=project, home=home).problems == ()
    again = inst.install("copilot-cli", project_root=project, home=home, trust=True)
    assert {c.action for c in again.changes} == {"unchanged"}


def test_install_output_names_the_machine_specific_files(tmp_path: Path, home: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    exclude = repo / ".git" / "info" / "exclude"
    before = exclude.read_bytes()
    out = run_cli("install", "claude-code", cwd=repo).stdout
    assert "commit: .mcp.json runs `ctxmode serve` from PATH" in out
    assert "machine-specific: .claude/settings.local.json run" in out
    assert "usually committed" not in out  # settings.local.json is meant for one machine
    # The per-machine file is kept out of git in this clone only: git shows what to commit.
    assert "not ignored by git" not in out
    assert "info/exclude: set the line keeping .claude/settings.local.json out of git" in out
    status = subprocess.run(
        ["git", "status", "--short", "-uall"], cwd=repo, capture_output=True, text=True
    ).stdout
    assert status.split() == ["??", ".mcp.json"], status
    again = run_cli("install", "claude-code", cwd=repo).stdout
    assert "machine-specific" not in again and "commit:" not in again  # nothing written
    assert run_cli("uninstall", "claude-code", cwd=repo).returncode == 0
    assert exclude.read_bytes() == before


def test_a_file_git_already_ignores_gets_no_exclude_line(tmp_path: Path, home: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / ".gitignore").write_text(".claude/settings.local.json\n")
    exclude = repo / ".git" / "info" / "exclude"
    before = exclude.read_bytes()
    out = run_cli("install", "claude-code", cwd=repo).stdout
    assert "info/exclude" not in out and "not ignored by git" not in out
    assert exclude.read_bytes() == before


def test_install_output_warns_about_a_shared_file_holding_this_machine_s_python(
    tmp_path: Path, home: Path
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    out = run_cli("install", "gemini-cli", cwd=repo).stdout
    assert "machine-specific: .gemini/settings.json" in out
    assert "usually committed: .gemini/settings.json;" in out and "--scope user" in out
    assert "not ignored by git: .gemini/settings.json;" in out
    assert "commit:" not in out


def test_kimi_code_hooks_are_user_scope_tables_that_keep_the_file(
    project: Path, home: Path
) -> None:
    with pytest.raises(InvalidInput, match="--scope user"):
        inst.install("kimi-code", project_root=project, home=home)
    path = home / ".kimi-code" / "config.toml"
    path.parent.mkdir(parents=True)
    path.write_text(KIMI_TOML)
    preview = inst.install("kimi-code", scope="user", project_root=project, home=home, dry_run=True)
    assert preview.changes and path.read_text() == KIMI_TOML
    inst.install("kimi-code", scope="user", project_root=project, home=home)
    text = path.read_text()
    assert text.startswith(KIMI_TOML)  # every line and comment of the user's kept
    tables = tomllib.loads(text)["hooks"]
    assert all(set(t) <= {"event", "matcher", "command", "timeout"} for t in tables)
    other = _other_python(project)
    inst.install("kimi-code", scope="user", project_root=project, home=home, python=other)
    commands = _our_commands("kimi-code", tomllib.loads(path.read_text()))
    assert all(len(c) == 1 and c[0].startswith(other) for c in commands.values())
    inst.uninstall("kimi-code", scope="user", project_root=project, home=home)
    assert path.read_text() == KIMI_TOML
    path.write_text("hooks = [{ event = 'Stop', command = 'x' }]\n")
    with pytest.raises(InvalidInput, match="edit it by hand"):
        inst.install("kimi-code", scope="user", project_root=project, home=home)
