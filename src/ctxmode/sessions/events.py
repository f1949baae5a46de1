"""Extraction: a normalized hook event -> the session event records worth keeping.

Pure functions, no I/O. Invariants:
- records hold summaries, never raw dumps: paths, commands (<= 200 chars), the first 100
  characters of edited text (lines kept), the error type and the informative lines of a
  failure (``sessions.failures``), prompt text (<= 300 chars) and the clauses its cues quote
  (``sessions.prompts``);
- every string in a record has gone through ``ctxmode.core.redact`` and shell ``export`` values are
  masked whatever their name;
- each record's category is one of the 24 in ``CATEGORIES`` and carries that priority.

Stateful detectors (error resolution, iteration loops, latency) need earlier hook calls and live
in ``ctxmode.sessions.records``; this module only supplies the keys they compare.
"""

from __future__ import annotations

import json
import os
import re

from ctxmode.core._lean import LazyRegex, sha256_hex
from ctxmode.core.redact import is_env_file, redact, redact_env_file
from ctxmode.sessions.prompts import external_refs, is_decision_text
from ctxmode.sessions.prompts import prompt_records as prompt_records
from ctxmode.sessions.vocab import (
    CATEGORIES as CATEGORIES,
)
from ctxmode.sessions.vocab import (
    COMMAND_CHARS,
    MESSAGE_CHARS,
    PLAN_CHARS,
    SNIPPET_CHARS,
    _rec,
    clip_lines,
)
from ctxmode.sessions.vocab import (
    HOOK_KINDS as HOOK_KINDS,
)
from ctxmode.sessions.vocab import (
    EventRecord as EventRecord,
)
from ctxmode.sessions.vocab import (
    NormalizedHookEvent as NormalizedHookEvent,
)
from ctxmode.sessions.vocab import (
    clip as clip,
)

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time (see _lean)
if TYPE_CHECKING:
    from typing import Any


#: File names whose reading means "the agent loaded project rules".
RULE_FILES = frozenset(
    {
        "claude.md",
        "claude.local.md",
        "agents.md",
        "gemini.md",
        ".cursorrules",
        ".windsurfrules",
        ".clinerules",
        "conventions.md",
        "copilot-instructions.md",
    }
)


# -- shell commands --------------------------------------------------------------------------

_EXPORT = LazyRegex(r"""\b(export\s+[A-Za-z_][A-Za-z0-9_]*=)("[^"]*"|'[^']*'|\S*)""")
_SEGMENT_SPLIT = LazyRegex(r"\s*(?:&&|\|\||;|\n)\s*")
_INSTALL = LazyRegex(
    r"^(?:sudo\s+)?(?:python3?\s+-m\s+)?(pip3?|uv(?:\s+pip)?|poetry|pipx|conda|mamba|npm|pnpm|"
    r"yarn|bun|cargo|go|gem|apt(?:-get)?|brew|dnf|yum|apk)\s+(install|add|i|get|sync)\b"
)
_ENV_SETUP = LazyRegex(
    r"^(?:source|\.)\s+\S*activate\b|^(?:python3?|uv)\s+(?:-m\s+)?venv\b|^nvm\s+use\b|"
    r"^pyenv\s+(?:local|shell)\b|^conda\s+activate\b"
)
_GIT_READONLY = frozenset(
    {"status", "log", "diff", "show", "blame", "ls-files", "rev-parse", "grep", "describe"}
)
_GIT_MSG = LazyRegex(r"""(?:\s-[a-zA-Z]*m|\s--message)(?:=|\s+)("[^"]*"|'[^']*'|\S+)""")


_ENV_FILE_WORD = LazyRegex(r"\.env(?![A-Za-z0-9_])")
_ENV_PAIR = LazyRegex(
    r"""(?<![A-Za-z0-9_$])([A-Za-z_][A-Za-z0-9_]*=)("[^"]*"|'[^']*'|[^\s"';&|)]+)"""
)


def mask_exports(command: str) -> str:
    """Replace every ``export NAME=value`` value with ``[masked]``; in a command that names a
    ``.env`` file (``echo "SALT=x" >> .env``, a heredoc into it), every ``NAME=value`` value."""
    out = _EXPORT.sub(r"\1[masked]", command)
    if ".env" in out and _ENV_FILE_WORD.search(out):
        out = _ENV_PAIR.sub(r"\1[masked]", out)
    return out


def _snippet(text: object, path: str | None) -> str | None:
    """The stored head of edited text; every value masked when the file is a ``.env`` file,
    as ``ctxmode index`` masks it."""
    if not isinstance(text, str):
        return None
    return clip_lines(redact_env_file(text) if path and is_env_file(path) else text, SNIPPET_CHARS)


def shell_records(command: str) -> list[EventRecord]:
    """Records for a shell command: git actions, cwd changes, installs, exports, env setup."""
    out: list[EventRecord] = []
    for segment in _SEGMENT_SPLIT.split(command.strip()):
        seg = segment.strip()
        if not seg:
            continue
        words = seg.split()
        head = words[0]
        if head == "cd" and len(words) > 1:
            out.append(_rec("environment", "cwd", path=clip(words[1], COMMAND_CHARS)))
        elif head == "git" and len(words) > 1:
            git = _git_record(seg, words)
            if git is not None:
                out.append(git)
        elif head == "export" and len(words) > 1:
            name = words[1].split("=", 1)[0]
            out.append(_rec("environment", "export", name=clip(name, 80), value="[masked]"))
        elif _INSTALL.match(seg):
            out.append(_rec("environment", "install", command=clip(mask_exports(seg), 200)))
        elif _ENV_SETUP.match(seg):
            out.append(_rec("environment", "setup", command=clip(mask_exports(seg), 200)))
    return out


def _git_record(seg: str, words: list[str]) -> EventRecord | None:
    args = words[1:]
    # Skip global options such as ``-C path`` or ``-c k=v`` before the subcommand.
    while args and args[0].startswith("-"):
        args = args[2:] if args[0] in ("-C", "-c") else args[1:]
    if not args:
        return None
    op = args[0]
    if op in _GIT_READONLY or op == "add":
        return None  # staging says nothing the commit will not
    data: dict[str, Any] = {"op": op}
    if op == "commit":
        m = _GIT_MSG.search(seg)
        if m:
            data["message"] = clip(m.group(1).strip("\"'"), MESSAGE_CHARS)
    elif op in ("checkout", "switch", "branch"):
        names = [a for a in args[1:] if not a.startswith("-")]
        if names:
            data["branch"] = clip(names[-1 if op == "branch" else 0], 120)
    elif op in ("push", "pull", "merge", "rebase", "reset", "revert", "cherry-pick", "tag"):
        rest = [a for a in args[1:] if not a.startswith("-")]
        if rest:
            data["target"] = clip(" ".join(rest), 120)
    else:
        data["command"] = clip(seg, COMMAND_CHARS)
    return EventRecord("git", op, data)


# -- text heuristics (English + Chinese) -----------------------------------------------------


# -- tool calls ------------------------------------------------------------------------------


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _is_rule_file(path: str) -> bool:
    low = path.replace("\\", "/").lower()
    name = low.rsplit("/", 1)[-1]
    return (
        name in RULE_FILES
        or name.endswith(".instructions.md")
        or "/.cursor/rules/" in low
        or "/.claude/rules/" in low
    )


def file_path_of(ev: NormalizedHookEvent) -> str:
    """The file a tool call is about, when it has one."""
    inp = ev.tool_input
    for key in ("file_path", "notebook_path", "path", "filePath", "absolute_path"):
        value = inp.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def call_target(ev: NormalizedHookEvent) -> str:
    """What a call acts on (file path, else the command's program and subcommand, else tool).

    The error-resolution detector pairs a failure with a later success on the same target.
    """
    path = file_path_of(ev)
    if path:
        return path
    command = _str(ev.tool_input.get("command"))
    if command:
        words = command.split()
        while words and "=" in words[0] and not words[0].startswith("-"):
            words = words[1:]  # FOO=1 pytest ...
        if len(words) > 2 and words[0] in _RUNNERS and words[1] in _RUNNERS[words[0]]:
            words = words[2:]  # python -m pytest, npx jest, uv run pytest ...
        elif len(words) > 1 and words[0] in ("npx", "bunx", "pnpx"):
            words = words[1:]
        return " ".join(words[:2])
    return ev.tool_name or ""


#: Launchers whose next word is not the program: ``python -m unittest x`` is ``unittest x``.
_RUNNERS = {
    "python": ("-m",),
    "python3": ("-m",),
    "py": ("-m",),
    "uv": ("run",),
    "poetry": ("run",),
    "pipenv": ("run",),
    "pnpm": ("exec", "dlx"),
    "npm": ("exec",),
    "yarn": ("exec", "dlx"),
}


def error_target(ev: NormalizedHookEvent) -> str:
    """What a failure is shown against: the file, else the command (exports masked)."""
    return file_path_of(ev) or clip(mask_exports(_str(ev.tool_input.get("command"))), COMMAND_CHARS)


def call_fingerprint(ev: NormalizedHookEvent) -> str:
    """Tool name plus canonical input: equal fingerprints = the same call repeated."""
    return f"{ev.tool_name}:{json.dumps(ev.tool_input, sort_keys=True, default=str)[:2000]}"


#: Characters of a failure's informative lines kept in its event (``failures``).
ERROR_CHARS = 400


def error_summary(message: str) -> tuple[str, str]:
    """(error type, informative lines) of a tool failure text (``failures.informative_lines``:
    the failing test and its message, the exception, ``file:line: error`` lines, the summary),
    one per line, verbatim."""
    from ctxmode.sessions.failures import error_type, informative_lines

    lines = informative_lines(message, ERROR_CHARS)
    return error_type(message, lines), "\n".join(clip(line, ERROR_CHARS) for line in lines)


def _patch_records(patch: str) -> list[EventRecord]:
    """File records from an ``apply_patch`` envelope (``*** Update File: path`` ...)."""
    out: list[EventRecord] = []
    current: dict[str, Any] | None = None
    ops = {"Update": "update", "Add": "create", "Delete": "delete"}
    for line in patch.splitlines():
        m = re.match(r"\*\*\* (Update|Add|Delete) File: (.+)", line)
        if m:
            current = {"path": m.group(2).strip(), "op": ops[m.group(1)], "old": "", "new": ""}
            out.append(EventRecord("file", current["op"], current))
        elif current is not None and line[:1] in "+-" and not line.startswith(("+++", "---")):
            slot = "new" if line[0] == "+" else "old"
            if len(current[slot]) < SNIPPET_CHARS and line[1:].strip():
                current[slot] = (current[slot] + "\n" + line[1:].strip()).strip()
    return [
        _rec(
            "file",
            r.type,
            **{
                k: _snippet(v, r.data["path"]) if k != "path" else clip(v, 300)
                for k, v in r.data.items()
            },
        )
        for r in out
    ]


_TASK_STATUS = {
    "pending": "pending",
    "todo": "pending",
    "not_started": "pending",
    "in_progress": "in_progress",
    "in-progress": "in_progress",
    "active": "in_progress",
    "completed": "completed",
    "done": "completed",
    "cancelled": "cancelled",
    "canceled": "cancelled",
    "deleted": "cancelled",
    "blocked": "blocked",
}


def task_status(value: Any) -> str:
    """Map an agent's todo status onto the tasks table vocabulary."""
    return _TASK_STATUS.get(str(value or "pending").strip().lower(), "pending")


def _todo_records(todos: Any) -> list[EventRecord]:
    out: list[EventRecord] = []
    if not isinstance(todos, list):
        return out
    for item in todos[:50]:
        if not isinstance(item, dict):
            continue
        subject = _str(item.get("content")) or _str(item.get("description"))
        subject = subject or _str(item.get("title"))
        if not subject.strip():
            continue
        subject = clip(subject, 200)
        out.append(
            _rec(
                "task",
                "todo",
                key=f"todo:{subject}",
                subject=subject,
                status=task_status(item.get("status")),
            )
        )
    return out


def _task_tool_records(ev: NormalizedHookEvent) -> list[EventRecord]:
    inp = ev.tool_input
    resp = ev.tool_response if isinstance(ev.tool_response, dict) else {}
    if ev.tool_name == "TaskCreate":
        nested = resp.get("task")
        task: dict[str, Any] = nested if isinstance(nested, dict) else resp
        task_id = task.get("id") or task.get("taskId")
        subject = clip(_str(inp.get("subject")) or _str(inp.get("description")), 200)
        if not subject:
            return []
        key = f"task:{task_id}" if task_id else f"todo:{subject}"
        return [_rec("task", "create", key=key, subject=subject, status="pending")]
    task_id = inp.get("taskId") or inp.get("id")
    if not task_id:
        return []
    data: dict[str, Any] = {"key": f"task:{task_id}"}
    if inp.get("subject"):
        data["subject"] = clip(inp["subject"], 200)
    if inp.get("status"):
        data["status"] = task_status(inp["status"])
    if inp.get("addBlockedBy"):
        data["status"] = "blocked"
    out = [EventRecord("task", "update", data)]
    if data.get("status") == "blocked":
        out.append(_rec("blocker", "task", text=clip(f"task {task_id} blocked", 100)))
    return out


def _response_text(resp: Any) -> str:
    if isinstance(resp, str):
        return resp
    if isinstance(resp, dict):
        content = resp.get("content")
        if isinstance(content, list):
            return " ".join(_str(c.get("text")) for c in content if isinstance(c, dict))
        for key in ("result", "output", "llmContent", "text"):
            if isinstance(resp.get(key), str):
                return str(resp[key])
    if isinstance(resp, list):
        return " ".join(_str(c.get("text")) for c in resp if isinstance(c, dict))
    return ""


def _read_record(path: str) -> list[EventRecord]:
    """What reading one file records: a read, or a rule read for an agent rule file."""
    if _is_rule_file(path):
        return [_rec("rule", "read", path=clip(path, 300))]
    return [_rec("data", "read", path=clip(path, 300))]


def _shell_reads(ev: NormalizedHookEvent, command: str) -> tuple[list[EventRecord], bool]:
    """Reads of the project files a shell command showed (``cat F``...; ``shell_reads``), and
    whether reading them is all the command did.

    Recorded by absolute path, as read tools report theirs, so a file the agent's read tool
    reported just before is not stored twice (``records`` skips a repeated record)."""
    from ctxmode.sessions.shell_reads import read_paths

    start = ev.cwd
    folder = _str(ev.tool_input.get("dir_path")) or _str(ev.tool_input.get("directory"))
    if start and folder:  # Gemini's run_shell_command runs in dir_path
        start = os.path.join(start, folder)
    paths, pure = read_paths(command, ev.cwd, start)
    out: list[EventRecord] = []
    for path in paths:
        if os.path.isfile(path):  # not a failed read (``cat: F: No such file``)
            out += _read_record(path)
    return out, pure and len(out) == len(paths)


#: git's first line after a commit: ``[feat/x 51f0c7d] message`` (Gemini: after ``Output: ``).
_COMMITTED = LazyRegex(r"(?m)(?:^|Output: )\[([^\s\]]+)(?: \(root-commit\))? ([0-9a-f]{7,40})\]")


def _with_commit(actions: list[EventRecord], resp: Any) -> list[EventRecord]:
    """Git records, the commit's with the branch and short hash git printed for it."""
    if not any(r.type == "commit" for r in actions):
        return actions
    text = _response_text(resp)
    if not text and isinstance(resp, dict):
        text = _str(resp.get("stdout"))
    m = _COMMITTED.search(text[:2000])
    if m is None:
        return actions
    extra = {"branch": clip(m.group(1), 120), "sha": m.group(2)[:12]}
    return [
        EventRecord(r.category, r.type, {**r.data, **extra}) if r.type == "commit" else r
        for r in actions
    ]


def tool_records(ev: NormalizedHookEvent) -> list[EventRecord]:
    """Records for one tool call (success or failure)."""
    name = ev.tool_name or ""
    inp = ev.tool_input
    path = file_path_of(ev)
    if ev.failed:
        kind, message = error_summary(ev.error or _response_text(ev.tool_response) or "failed")
        out = [_rec("error", kind, tool=name, target=error_target(ev), message=message)]
        if name == "ExitPlanMode":
            out.append(_rec("rejected_approach", "plan", text=clip(inp.get("plan", ""), 200)))
        return out
    if name in ("Edit", "MultiEdit", "Write", "NotebookEdit"):
        if name == "Edit":
            old, new, op = inp.get("old_string"), inp.get("new_string"), "edit"
        elif name == "MultiEdit":
            edits = inp.get("edits") if isinstance(inp.get("edits"), list) else []
            first = edits[0] if edits and isinstance(edits[0], dict) else {}
            old, new, op = first.get("old_string"), first.get("new_string"), "edit"
        elif name == "Write":
            old, new, op = None, inp.get("content"), "write"
        else:
            old, new = None, inp.get("new_source")
            op = f"notebook_{inp.get('edit_mode') or 'replace'}"
        out = [
            _rec(
                "file",
                op,
                path=clip(path, 300),
                old=_snippet(old, path),
                new=_snippet(new, path),
            )
        ]
        if path and _is_rule_file(path):
            out.append(_rec("rule", "updated", path=clip(path, 300)))
        return out
    if name == "apply_patch":
        return _patch_records(
            _str(inp.get("command")) or _str(inp.get("patch")) or _str(inp.get("input"))
        )
    if name == "Read":
        paths = inp.get("paths")
        if not path and isinstance(paths, list):
            return [_rec("data", "read", path=clip(", ".join(map(str, paths[:5])), 300))]
        return _read_record(path) if path else []
    if name == "Bash":
        from ctxmode.sessions.shell_reads import command_text

        text = command_text(inp.get("command"))
        command = mask_exports(text)
        if not command.strip():
            return []
        actions = shell_records(command)
        if any(r.category == "git" for r in actions):
            return _with_commit(actions, ev.tool_response)  # what the command did
        reads, only_reads = _shell_reads(ev, text)
        if only_reads:
            return reads + actions  # ``cat F``: the read says it all
        return [*reads, _rec("data", "command", command=clip(command, COMMAND_CHARS)), *actions]
    if name == "Search":
        query = _str(inp.get("pattern")) or _str(inp.get("query")) or path
        return (
            [_rec("data", "search", query=clip(query, 160), path=clip(path, 200))] if query else []
        )
    if name == "WebSearch":
        return [_rec("data", "web_search", query=clip(inp.get("query", ""), 160))]
    if name == "WebFetch":
        url = _str(inp.get("url"))
        return [_rec("external_ref", "url", url=clip(url, 200))] if url else []
    if name == "TodoWrite":
        return _todo_records(inp.get("todos"))
    if name in ("TaskCreate", "TaskUpdate"):
        return _task_tool_records(ev)
    if name == "ExitPlanMode":
        return [
            _rec(
                "plan",
                "approved",
                text=clip(inp.get("plan", ""), PLAN_CHARS),
                path=clip(inp.get("planFilePath", ""), 300),
            )
        ]
    if name == "EnterPlanMode":
        return [_rec("plan", "entered")]
    if name == "AskUserQuestion":
        return _question_records(inp, ev.tool_response)
    if name == "Agent":
        return _agent_records(inp, ev.tool_response)
    if name == "Skill":
        skill = _str(inp.get("skill")) or _str(inp.get("name")) or _str(inp.get("command"))
        return [_rec("skill", "used", name=clip(skill, 120))] if skill else []
    if name.startswith("mcp__"):
        parts = name.split("__")
        if parts[1:2] == ["ctxmode"] and parts[-1] in _KNOWLEDGE_WRITES:
            return _knowledge_records(inp, ev.tool_response)
        args = json.dumps(inp, ensure_ascii=False, sort_keys=True, default=str)
        return [
            _rec(
                "mcp_tool",
                "call",
                server=clip(parts[1] if len(parts) > 1 else "", 80),
                tool=clip("__".join(parts[2:]), 80),
                args=clip(args, SNIPPET_CHARS),
            )
        ]
    return []


#: ctxmode's MCP tools that store a context: the snapshot shows the context, not the call.
_KNOWLEDGE_WRITES = frozenset({"write_context"})


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def _stored_id(resp: Any) -> int | None:
    """The context id of a ``write_context`` result's structured content (as JSON text or an
    object), when the agent passes it on; else None (``records`` finds it in the store)."""
    if isinstance(resp, str) and resp.lstrip().startswith("{"):
        resp = _json_or_text(resp)
    if isinstance(resp, dict):
        for holder in (resp, resp.get("structuredContent")):
            if isinstance(holder, dict) and isinstance(holder.get("id"), int):
                return int(holder["id"])
    return None


def _knowledge_records(inp: dict[str, Any], resp: Any) -> list[EventRecord]:
    """A context stored through ctxmode's MCP server: its type, id and first words. Without
    the id in the result (an agent that hands hooks the reply's text only), ``content_hash``
    (the store's own, ``knowledge.contexts.content_hash``) lets ``records`` look it up."""
    content = _str(inp.get("content"))
    if not content.strip():
        return []
    kind = clip(_str(inp.get("type")) or "note", 40)
    ident = _stored_id(resp)
    if ident is not None:
        return [_rec("knowledge", kind, id=ident, text=clip(content, 200))]
    stored = redact(content).strip()
    digest = "sha256:" + sha256_hex(f"{kind}\0{stored}".encode())
    return [_rec("knowledge", kind, id=None, text=clip(content, 200), content_hash=digest)]


def _question_records(inp: dict[str, Any], resp: Any) -> list[EventRecord]:
    raw_questions = inp.get("questions")
    questions: list[Any] = raw_questions if isinstance(raw_questions, list) else []
    answers = inp.get("answers")
    if not answers and isinstance(resp, dict):
        answers = resp.get("answers")
    out = []
    for q in questions[:3]:
        if not isinstance(q, dict):
            continue
        question = _str(q.get("question"))
        answer = answers.get(question) if isinstance(answers, dict) else None
        text = question + (f" -> {answer}" if answer else "")
        out.append(_rec("decision", "question", text=clip(text, 240)))
    return out


def _agent_records(inp: dict[str, Any], resp: Any) -> list[EventRecord]:
    desc = clip(_str(inp.get("description")) or _str(inp.get("prompt")), 120)
    agent_type = clip(_str(inp.get("subagent_type")), 60)
    status = _str(resp.get("status")) if isinstance(resp, dict) else ""
    if status == "async_launched" or not resp:
        return [_rec("subagent", "launched", description=desc, agent_type=agent_type)]
    out = [_rec("subagent", "completed", description=desc, agent_type=agent_type)]
    text = _response_text(resp)
    if text.strip():
        out.append(_rec("agent_finding", "subagent", text=clip(text, 300), source=desc))
    return out


def extract(ev: NormalizedHookEvent) -> list[EventRecord]:
    """All records for one hook call (detector records are added by ``sessions.records``)."""
    if ev.kind in ("post_tool_use", "post_tool_use_failure"):
        records = tool_records(ev)
        if ev.tool_name == "Bash" and not ev.failed:
            records += [
                r for r in external_refs(_str(ev.tool_input.get("command"))) if r.type == "issue"
            ]
        return records
    if ev.kind == "user_prompt" and ev.prompt and ev.prompt_source not in ("system",):
        return prompt_records(ev.prompt)
    if ev.kind == "stop" and not ev.stop_hook_active and ev.last_assistant_message:
        if is_decision_text(ev.last_assistant_message):
            return [_rec("decision", "assistant", text=clip(ev.last_assistant_message, 300))]
        return []
    if ev.kind == "subagent_start":
        agent_type = clip(_str(ev.tool_input.get("agent_type")), 60)
        return [_rec("subagent", "started", agent_type=agent_type)]
    if ev.kind == "subagent_stop" and ev.last_assistant_message:
        return [_rec("agent_finding", "subagent", text=clip(ev.last_assistant_message, 300))]
    return []
