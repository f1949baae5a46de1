def test_a_project_below_the_repository_top_gets_no_exclude_line(
    tmp_path: Path, home: Path
) -> None:
    """``.git/info/exclude`` patterns are relative to the repository's top folder: a project
    in a subfolder gets no line rather than a wrong one (the output says what to ignore)."""
    repo = tmp_path / "mono"
    (repo / "svc").mkdir(parents=True)
    _git(repo, "init", "-q")
    exclude = repo / ".git" / "info" / "exclude"
    before = exclude.read_bytes()
    result = inst.install("claude-code", project_root=repo / "svc", home=home, hooks="command")
    assert not [c for c in result.changes if "exclude" in c.path]
    assert exclude.read_bytes() == before
