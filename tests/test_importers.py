"""Importers: review findings -> constraints, task lists -> tasks, docs -> references."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli
from ctxmode import InvalidInput, Store
from ctxmode.exchange.importers import import_docs, import_findings, import_tasks, parse_tasks


def test_findings_from_json_become_linked_constraints(store: Store, project: Path) -> None:
    (project / "src").mkdir()
    (project / "src" / "api.py").write_text("x = 1\n")
    findings = {
        "findings": [
            {"title": "SQL injection", "message": "Use bound parameters", "file": "src/api.py",
             "line": 12, "severity": "high"},
            {"message": "Never log the password=hunter2 value", "file": "/etc/passwd"},
            "Keep handlers under 50 lines",
        ]
    }  # fmt: skip
    (project / "review.json").write_text(json.dumps(findings))
    summary = import_findings(store, "review.json")
    assert summary.created == 3 and summary.unchanged == 0
    ctxs = store.list_contexts(context_type="constraint")
    by_text = {c.content: c for c in ctxs}
    sql = by_text["SQL injection: Use bound parameters"]
    assert sql.metadata["line"] == 12 and sql.metadata["severity"] == "high"
    assert [f.path for f in store.context_detail(sql.id).files] == ["src/api.py"]
    assert any("hunter2" not in c.content and "REDACTED" in c.content for c in ctxs)
    assert summary.skipped  # /etc/passwd is outside the project: not linked
    again = import_findings(store, "review.json")
    assert again.created == 0 and again.unchanged == 3
    assert len(store.list_contexts(context_type="constraint")) == 3


def test_findings_from_markdown_bullets(store: Store, project: Path) -> None:
    (project / "app.py").write_text("pass\n")
    (project / "review.md").write_text(
        "# Review\n- `app.py:3` swallows exceptions\n  in the retry loop\n- Add type hints\n"
    )
    summary = import_findings(store, "review.md")
    assert summary.created == 2
    texts = sorted(c.content for c in store.list_contexts(context_type="constraint"))
    assert texts[1] == "`app.py:3` swallows exceptions in the retry loop"
    linked = store.list_contexts(file_path="app.py")
    assert len(linked) == 1


def test_markdown_checklist_nesting_and_statuses(store: Store, project: Path) -> None:
    (project / "TODO.md").write_text(
        "# Plan\n- [ ] Ship search\n  - [x] Schema\n  - [ ] Ranking\n    - [~] RRF\n"
        "- [x] Write docs\n* [-] Dropped idea\nnot a task\n"
    )
    summary = import_tasks(store, "TODO.md")
    assert summary.created == 6
    tasks = {t.name: t for t in store.list_tasks()}
    assert tasks["Schema"].parent_id == tasks["Ship search"].id
    assert tasks["RRF"].parent_id == tasks["Ranking"].id
    assert tasks["Ship search"].parent_id is None
    assert tasks["Schema"].status == "completed"
    assert tasks["RRF"].status == "in_progress"
    assert tasks["Dropped idea"].status == "cancelled"
    # Re-import: nothing new; a changed checkbox updates the status.
    (project / "TODO.md").write_text(
        "# Plan\n- [ ] Ship search\n  - [x] Schema\n  - [x] Ranking\n    - [~] RRF\n"
        "- [x] Write docs\n* [-] Dropped idea\n"
    )
    again = import_tasks(store, "TODO.md")
    assert again.created == 0 and again.updated == 1 and again.unchanged == 5
    assert store.get_task(tasks["Ranking"].id).status == "completed"
    assert len(store.list_tasks()) == 6


def test_json_task_list(store: Store, project: Path) -> None:
    data = {"tasks": [{"name": "Epic", "children": [{"title": "Step", "done": True}]}, "Loose"]}
    (project / "tasks.json").write_text(json.dumps(data))
    import_tasks(store, "tasks.json")
    tasks = {t.name: t for t in store.list_tasks()}
    assert tasks["Step"].parent_id == tasks["Epic"].id and tasks["Step"].status == "completed"
    assert tasks["Loose"].status == "pending"
    with pytest.raises(InvalidInput, match="unknown status"):
        parse_tasks('[{"name": "x", "status": "someday"}]')
    (project / "empty.md").write_text("nothing here\n")
    with pytest.raises(InvalidInput, match="no tasks"):
        import_tasks(store, "empty.md")


def test_docs_folder_becomes_reference_sections(store: Store, project: Path) -> None:
    docs = project / "docs"
    docs.mkdir()
    (docs / "deploy.md").write_text("# Deploy\nUse blue/green.\n## Rollback\nRun rollback.sh\n")
    (docs / "notes.txt").write_text("Plain notes about caching.\n")
    (docs / "image.png").write_bytes(b"\x89PNG\0")
    summary = import_docs(store, "docs")
    assert summary.created == 3
    refs = store.list_contexts(context_type="reference")
    rollback = next(c for c in refs if "Rollback" in c.content)
    assert rollback.content.startswith("docs/deploy.md > Deploy > Rollback")
    assert [f.path for f in store.context_detail(rollback.id).files] == ["docs/deploy.md"]
    assert import_docs(store, "docs").unchanged == 3
    # A changed section supersedes its previous version; the others stay.
    (docs / "deploy.md").write_text("# Deploy\nUse blue/green.\n## Rollback\nRun undo.sh\n")
    changed = import_docs(store, "docs")
    assert changed.created == 1 and changed.superseded == 1 and changed.unchanged == 2
    assert store.get_context(rollback.id).superseded_by is not None


def test_cli_import_commands(project: Path) -> None:
    (project / "TODO.md").write_text("- [ ] one\n  - [x] two\n")
    proc = run_cli("import-tasks", "TODO.md", "--json", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["created"] == 2
    (project / "d").mkdir()
    (project / "d" / "a.md").write_text("# A\ntext\n")
    assert json.loads(run_cli("import-docs", "d", "--json", cwd=project).stdout)["created"] == 1
    (project / "f.json").write_text('["finding one"]')
    out = run_cli("import-findings", "f.json", cwd=project)
    assert out.returncode == 0 and "1 created" in out.stdout
    missing = run_cli("import-tasks", "nope.md", cwd=project)
    assert missing.returncode == 1 and "Error:" in missing.stderr


def test_malformed_json_lists_give_clear_errors() -> None:
    from ctxmode.exchange.importers import parse_findings

    with pytest.raises(InvalidInput, match="findings file is not valid JSON"):
        parse_findings("[{oops")
    with pytest.raises(InvalidInput, match='task JSON must be a list or {"tasks"'):
        parse_tasks('{"tasks": 3}')
    assert parse_tasks('{"tasks": [{"name": "a"}]}')[0].name == "a"
    assert parse_findings('{"issues": [{"text": "no sync IO in handlers"}]}')[0]["text"]


def test_a_json_file_that_does_not_parse_is_reported_not_read_as_markdown(project: Path) -> None:
    """A findings.json broken by hand must not turn into a constraint saying "not json"."""
    (project / "findings.json").write_text("not json, a stray line\n- [ ] item\n")
    (project / "tasks.json").write_text("- [ ] looks like a checklist\n")
    for command, name in (("import-findings", "findings.json"), ("import-tasks", "tasks.json")):
        proc = run_cli(command, name, "--json", cwd=project)
        assert proc.returncode == 1, proc.stdout
        assert "not valid JSON" in json.loads(proc.stdout)["error"]
    assert json.loads(run_cli("query", "--json", cwd=project).stdout)["items"] == []
    assert json.loads(run_cli("task", "list", "--json", cwd=project).stdout)["tasks"] == []
