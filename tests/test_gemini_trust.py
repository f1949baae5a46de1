"""Gemini CLI folder trust (``agents.gemini_trust``): real trust files in a temp HOME, written as
Gemini CLI 0.61 reads them (the real binary accepts them: ``tests/e2e/test_gemini_cli.py``)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from conftest import run_cli
from ctxmode.agents import install as inst
from ctxmode.core.errors import InvalidInput


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"  # created and exported as $HOME by conftest


def trust_file(home: Path) -> Path:
    return home / ".gemini" / "trustedFolders.json"


def gemini_problems(project: Path, home: Path) -> list[str]:
    st = inst.status("gemini-cli", project_root=project, home=home)
    assert st.hooks_installed and st.mcp_installed
    return [p for p in st.problems if "Gemini CLI" in p]


def test_install_trust_records_the_folder_and_keeps_other_entries(
    project: Path, home: Path
) -> None:
    inst.install("gemini-cli", project_root=project, home=home)
    (problem,) = gemini_problems(project, home)
    assert f"does not trust {os.path.realpath(project)}" in problem
    assert "ctxmode install gemini-cli --trust" in problem and "/permissions trust" in problem
    path = trust_file(home)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{\n  // mine\n  "/srv/other": "DO_NOT_TRUST"\n}\n', encoding="utf-8")
    os.chmod(path, 0o640)
    result = inst.install("gemini-cli", project_root=project, home=home, trust=True)
    (change,) = [c for c in result.changes if c.path == str(path)]
    assert change.action == "update"
    text = path.read_text(encoding="utf-8")
    assert "// mine" in text  # the user's comment and entries stay
    from ctxmode.agents import jsonc

    assert jsonc.loads(text) == {
        "/srv/other": "DO_NOT_TRUST",
        os.path.realpath(project): "TRUST_FOLDER",
    }
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert gemini_problems(project, home) == []
    again = inst.install("gemini-cli", project_root=project, home=home, trust=True)
    assert {c.action for c in again.changes} == {"unchanged"}
    assert path.read_text(encoding="utf-8") == text


def test_a_new_trust_file_is_private_and_dry_run_writes_nothing(project: Path, home: Path) -> None:
    dry = inst.install("gemini-cli", project_root=project, home=home, trust=True, dry_run=True)
    assert [(c.path, c.action) for c in dry.changes][-1] == (str(trust_file(home)), "create")
    assert not trust_file(home).exists() and not (project / ".gemini").exists()
    inst.install("gemini-cli", project_root=project, home=home, trust=True)
    assert stat.S_IMODE(trust_file(home).stat().st_mode) == 0o600  # as Gemini CLI creates it
    assert json.loads(trust_file(home).read_text()) == {os.path.realpath(project): "TRUST_FOLDER"}


@pytest.mark.parametrize(
    "text, why",
    [('{"/a": "TRUST_FOLDER",', "not valid JSON"), ('{"/a": "YES"}', "trust levels"),
     ('["/a"]', "JSON object")],
)  # fmt: skip
def test_a_malformed_trust_file_is_refused_and_kept(
    project: Path, home: Path, text: str, why: str
) -> None:
    path = trust_file(home)
    path.parent.mkdir(parents=True)
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInput, match=why):
        inst.install("gemini-cli", project_root=project, home=home, trust=True)
    assert path.read_text(encoding="utf-8") == text
    assert not (project / ".gemini").exists()  # plan, then write: nothing at all was written
    inst.install("gemini-cli", project_root=project, home=home)  # without --trust: installs
    (problem,) = gemini_problems(project, home)
    assert "refuses to start" in problem and str(path) in problem


def test_parent_rules_and_distrust_decide_as_gemini_does(project: Path, home: Path) -> None:
    real = Path(os.path.realpath(project))
    path = trust_file(home)
    path.parent.mkdir(parents=True)
    inst.install("gemini-cli", project_root=project, home=home)
    # TRUST_PARENT on a sibling trusts the parent folder, hence the project
    path.write_text(json.dumps({str(real.parent / "sibling"): "TRUST_PARENT"}))
    assert gemini_problems(project, home) == []
    before = path.read_text()
    result = inst.install("gemini-cli", project_root=project, home=home, trust=True)
    assert {c.action for c in result.changes} == {"unchanged"} and path.read_text() == before
    # the longest rule wins: the project's own DO_NOT_TRUST beats the parent's trust
    path.write_text(json.dumps({str(real.parent): "TRUST_FOLDER", str(real): "DO_NOT_TRUST"}))
    (problem,) = gemini_problems(project, home)
    assert "distrusts" in problem
    result = inst.install("gemini-cli", project_root=project, home=home, trust=True)
    assert "was DO_NOT_TRUST" in result.changes[-1].summary
    assert json.loads(path.read_text())[str(real)] == "TRUST_FOLDER"
    assert gemini_problems(project, home) == []
    # a rule for a folder inside the project, or beside it, does not cover it
    path.write_text(json.dumps({str(real / "sub"): "TRUST_FOLDER", f"{real}x": "TRUST_FOLDER"}))
    assert len(gemini_problems(project, home)) == 1


def test_a_symlinked_project_is_trusted_by_its_real_path(tmp_path: Path, home: Path) -> None:
    real = tmp_path / "real"
    (real / ".git").mkdir(parents=True)
    link = tmp_path / "link"
    link.symlink_to(real)
    inst.install("gemini-cli", project_root=link, home=home, trust=True)
    assert json.loads(trust_file(home).read_text()) == {str(real.resolve()): "TRUST_FOLDER"}
    assert gemini_problems(link, home) == [] and gemini_problems(real, home) == []


def test_folder_trust_turned_off_needs_nothing(
    tmp_path: Path, project: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"security": {"folderTrust": {"enabled": False}}}))
    result = inst.install("gemini-cli", project_root=project, home=home)
    assert "trust" not in result.changes[0].summary
    assert gemini_problems(project, home) == []
    # the system settings override the user's
    system = tmp_path / "etc-gemini" / "settings.json"
    system.parent.mkdir(parents=True)
    system.write_text(json.dumps({"security": {"folderTrust": {"enabled": True}}}))
    assert len(gemini_problems(project, home)) == 1
    monkeypatch.setenv("GEMINI_CLI_TRUSTED_FOLDERS_PATH", str(tmp_path / "trust.json"))
    inst.install("gemini-cli", project_root=project, home=home, trust=True)
    assert json.loads((tmp_path / "trust.json").read_text()) == {
        os.path.realpath(project): "TRUST_FOLDER"
    }
    assert not trust_file(home).exists()
    assert gemini_problems(project, home) == []


def test_user_scope_writes_no_folder_trust(project: Path, home: Path) -> None:
    result = inst.install("gemini-cli", scope="user", project_root=project, home=home, trust=True)
    assert [c.path for c in result.changes] == [str(home / ".gemini" / "settings.json")]
    assert "trust" not in result.changes[0].summary
    assert not trust_file(home).exists()
    assert gemini_problems(project, home) == []


def test_trust_is_refused_for_agents_without_one(project: Path, home: Path) -> None:
    with pytest.raises(InvalidInput, match="Codex .*, Gemini CLI and Copilot CLI"):
        inst.install("cursor", project_root=project, home=home, trust=True)


def test_cli_says_the_step_and_agents_and_doctor_report_it(project: Path, home: Path) -> None:
    out = run_cli("install", "gemini-cli", cwd=project)
    assert out.returncode == 0, out.stderr
    assert "ctxmode install gemini-cli --trust" in out.stdout and "/permissions trust" in out.stdout
    dry = run_cli("install", "gemini-cli", "--trust", "--dry-run", cwd=project)
    assert "~/.gemini/trustedFolders.json: added Gemini CLI folder trust of" in dry.stdout
    assert not trust_file(home).exists()
    agents = json.loads(run_cli("agents", "--json", cwd=project).stdout)
    (gemini,) = [a for a in agents if a["agent"] == "gemini-cli"]
    assert gemini["hooks_installed"] and any("does not trust" in p for p in gemini["problems"])
    doctor = json.loads(run_cli("doctor", "--json", cwd=project).stdout)
    checks = doctor["checks"] if isinstance(doctor, dict) else doctor
    (check,) = [c for c in checks if c["name"] == "agent gemini-cli"]
    assert check["level"] == "WARN" and "--trust" in check["fix"]
    assert run_cli("install", "gemini-cli", "--trust", cwd=project).returncode == 0
    agents = json.loads(run_cli("agents", "--json", cwd=project).stdout)
    (gemini,) = [a for a in agents if a["agent"] == "gemini-cli"]
    assert gemini["problems"] == []
    human = run_cli("agents", cwd=project).stdout
    assert "does not trust" not in human
