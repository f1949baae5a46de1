"""Each agent's transcript -> the hook payloads its hooks would have sent, with their times.

A reader takes a transcript file and the offset read last time and returns a ``Chunk``: the
rebuilt payloads (``sessions.adapters.normalize`` turns them into the same events the hooks
record), the offset to continue from, and what the file says about its session (id, working
directory, git remote, compactions). Readers never raise on odd content: lines that are not
JSON or not of a known shape are passed over; a file that cannot be read at all raises
``Unreadable`` with the reason.

Shapes, as the pinned agents of the e2e tests write them:
- Claude Code 2.1: JSON Lines, ``sessions.transcript.claude_read`` (shared with the hooks'
  backfill);
- Codex 0.171: ``rollout-*.jsonl``: ``session_meta`` (id, cwd, git.repository_url),
  ``response_item`` (``message``, ``function_call``/``custom_tool_call`` and their
  ``*_output`` by ``call_id``), ``compacted``, ``event_msg`` ``task_complete``;
- Gemini CLI 0.61: ``chats/session-*.jsonl`` (a header, messages by ``id``, later lines
  replacing earlier versions of a message, ``$set`` lines) or an older single ``.json``
  document with ``messages``; tool calls carry their result; the project root is in
  ``.project_root`` beside ``chats``;
- OpenCode 1.18: a SQLite database (``opencode.db``: ``session``, ``message``, ``part``), read
  by ``opencode_sessions``.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxmode.sessions.transcript import claude_read, iso_ms

#: Most of a transcript read at once (bytes): a long session is read in several chunks.
CHUNK_BYTES = 16 * 1024 * 1024


class Unreadable(Exception):
    """The transcript cannot be read at all (the message says why)."""


@dataclass(frozen=True)
class Chunk:
    """What one read of a transcript found."""

    #: (Unix ms, hook payload) in order; payloads carry no session fields.
    calls: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    #: The offset to continue from next time.
    resume: int = 0
    session_id: str | None = None
    cwd: str | None = None
    #: The git remote the agent recorded for the session, if any (Codex does).
    remote: str | None = None
    compactions: int = 0
    nbytes: int = 0
    #: True when the read reached the end of the file (no further chunk).
    done: bool = True


def _read_bytes(path: Path, offset: int, limit: int) -> tuple[bytes, int]:
    """Up to ``limit`` bytes from ``offset`` (0 when the file shrank: rewritten), and the
    offset used."""
    try:
        with path.open("rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            if offset > size:
                offset = 0
            handle.seek(offset)
            return handle.read(limit), offset
    except OSError as exc:
        raise Unreadable(f"cannot read: {exc.strerror or exc}") from exc


# -- Claude Code -----------------------------------------------------------------------------


def read_claude(path: Path, offset: int, state: dict[str, Any]) -> Chunk:
    """A Claude Code transcript (``~/.claude/projects/<slug>/<session id>.jsonl``)."""
    if not path.is_file():
        raise Unreadable("not a regular file")
    read = claude_read(str(path), offset, CHUNK_BYTES, stops=True)
    if read.nbytes == 0:
        past = _past_long_line(path, offset)
        if past is not None:
            return Chunk(resume=past, nbytes=past - offset, done=False)
    if offset == 0 and not read.calls:
        _check_lines(path)
    return Chunk(
        calls=list(zip(read.times, read.calls, strict=True)),
        resume=read.resume,
        session_id=read.session_id or _uuid_name(path),
        cwd=read.cwd,
        compactions=read.compactions,
        nbytes=read.nbytes,
        done=read.resume <= offset or read.resume >= _size(path),
    )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _past_long_line(path: Path, offset: int) -> int | None:
    """After a line longer than a chunk (a whole image, say): the offset past it, so the
    lines after it are read; None when the line is the file's last (still being written)."""
    try:
        with path.open("rb") as handle:
            handle.seek(offset)
            at = offset
            while block := handle.read(1024 * 1024):
                newline = block.find(b"\n")
                if newline != -1:
                    return at + newline + 1
                at += len(block)
    except OSError:
        return None
    return None


def _check_lines(path: Path) -> None:
    """Raise ``Unreadable`` when a transcript that gave nothing holds lines that are not JSON
    (a session that has no prompt yet is no error)."""
    data, _ = _read_bytes(path, 0, CHUNK_BYTES)
    whole = data[: data.rfind(b"\n") + 1]  # a line cut by the chunk's end is no fault
    lines = [line for line in whole.split(b"\n") if line.strip()]
    bad = 0
    for line in lines:
        try:
            json.loads(line)
        except (ValueError, RecursionError):
            bad += 1
    if lines and bad == len(lines):
        raise Unreadable("no line is JSON")
    if bad:
        raise Unreadable(f"{bad} of {len(lines)} lines are not JSON; no prompt or call read")


def _uuid_name(path: Path) -> str | None:
    from ctxmode.sessions.adapters import find_uuid

    found = find_uuid(path.name)
    return found.lower() if found else None


# -- Codex -----------------------------------------------------------------------------------

#: Codex's user-role messages that are its own context, not what the user typed.
_CODEX_NOT_PROMPTS = (
    "<environment_context>",
    "<user_instructions>",
    "<skills_instructions>",
    "<turn_aborted>",
    "# AGENTS.md",
    "<user_shell_command>",
)


#: Rollout lines whose type (near the start of the line) says they hold nothing to import.
_CODEX_SKIP = re.compile(
    rb'"type": ?"(?:event_msg|world_state|token_usage_record|thread_settings_applied)"'
)


def read_codex(path: Path, offset: int, state: dict[str, Any]) -> Chunk:
    """A Codex rollout (``$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl``)."""
    data, offset = _read_bytes(path, offset, CHUNK_BYTES)
    end = data.rfind(b"\n") + 1
    if end == 0:
        past = _past_long_line(path, offset) if len(data) == CHUNK_BYTES else None
        if past is not None:
            return Chunk(resume=past, nbytes=past - offset, done=False)
        if offset == 0 and data.strip():
            raise Unreadable("no complete JSON line")
        return Chunk(resume=offset, nbytes=0)
    pending: dict[str, tuple[int, int, str, dict[str, Any]]] = {}
    out: list[tuple[int, int, dict[str, Any]]] = []
    meta: dict[str, Any] = {}
    compactions = 0
    good = 0
    at = 0
    for raw in data[:end].split(b"\n"):
        start, at = at, at + len(raw) + 1
        if not raw.strip():
            continue
        head = raw[:160]
        if _CODEX_SKIP.search(head) and b"task_complete" not in head:
            good += 1  # token counts, world state ...: whole lines, nothing to read
            continue
        try:
            entry = json.loads(raw)
        except (ValueError, RecursionError):
            continue
        if not isinstance(entry, dict):
            continue
        good += 1
        kind, payload = entry.get("type"), entry.get("payload")
        if not isinstance(payload, dict):
            if kind == "compacted":
                compactions += 1
            continue
        stamp = entry.get("timestamp")
        ms = iso_ms(stamp) if isinstance(stamp, str) else 0
        if kind == "session_meta":
            meta.setdefault("id", payload.get("id"))
            meta.setdefault("cwd", payload.get("cwd"))
            git = payload.get("git")
            if isinstance(git, dict) and isinstance(git.get("repository_url"), str):
                meta.setdefault("remote", git["repository_url"])
        elif kind == "turn_context" and isinstance(payload.get("cwd"), str):
            meta.setdefault("cwd", payload["cwd"])
        elif kind == "compacted":
            compactions += 1
        elif kind == "event_msg" and payload.get("type") == "task_complete":
            text = payload.get("last_agent_message")
            if isinstance(text, str) and text.strip():
                stop = {"hook_event_name": "Stop", "last_assistant_message": text}
                out.append((offset + start, ms, stop))
        elif kind == "response_item":
            _codex_item(payload, offset + start, ms, pending, out)
    resume = offset + end
    if pending:
        resume = min(resume, min(line for line, _, _, _ in pending.values()))
    if good == 0 and offset == 0:
        raise Unreadable("no JSON line")
    out.sort(key=lambda item: item[0])
    return Chunk(
        calls=[(ms, payload) for _, ms, payload in out],
        resume=resume,
        session_id=_s(meta.get("id")) or _uuid_name(path),
        cwd=_s(meta.get("cwd")),
        remote=_s(meta.get("remote")),
        compactions=compactions,
        nbytes=end,
        done=len(data) < CHUNK_BYTES or resume <= offset,
    )


def _codex_item(
    item: dict[str, Any],
    line: int,
    ms: int,
    pending: dict[str, tuple[int, int, str, dict[str, Any]]],
    out: list[tuple[int, int, dict[str, Any]]],
) -> None:
    kind = item.get("type")
    if kind == "message" and item.get("role") == "user":
        text = text_of(item.get("content"))
        if text and not text.lstrip().startswith(_CODEX_NOT_PROMPTS):
            out.append((line, ms, {"hook_event_name": "UserPromptSubmit", "prompt": text}))
    elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
        call_id = _s(item.get("call_id"))
        if call_id is None:
            return
        name, tool_input = _codex_call(item)
        if name:
            pending[call_id] = (line, ms, name, tool_input)
    elif kind in ("function_call_output", "custom_tool_call_output"):
        call_id = _s(item.get("call_id"))
        if call_id is None or call_id not in pending:
            return
        call_line, _, name, tool_input = pending.pop(call_id)
        code, text = _codex_output(item.get("output"))
        payload: dict[str, Any] = {
            "tool_name": name,
            "tool_input": tool_input,
            "tool_use_id": call_id,
        }
        if name == "Bash" and code:
            # The rollout has the exit code, which Codex's PostToolUse hook does not send (its
            # adapter guesses from the output); the message stays the output, as the hook's.
            payload.update(hook_event_name="PostToolUseFailure", error=text)
        else:
            payload.update(hook_event_name="PostToolUse", tool_response=text)
        out.append((call_line, ms, payload))


def _codex_call(item: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
    """(tool name as Codex's hooks send it, tool input) of one call item."""
    name = _s(item.get("name")) or ""
    if item.get("type") == "custom_tool_call":
        text = item.get("input")
        return (name or None), ({"command": text} if isinstance(text, str) else {})
    raw = item.get("arguments")
    args: Any = raw
    if isinstance(raw, str):
        try:
            args = json.loads(raw)
        except ValueError:
            args = {}
    if item.get("type") == "local_shell_call":
        action = item.get("action")
        args = action if isinstance(action, dict) else {}
        name = "shell"
    if not isinstance(args, dict):
        args = {}
    namespace = _s(item.get("namespace"))
    if namespace and namespace.startswith("mcp__"):
        return f"{namespace}__{name}", args
    if name in ("exec_command", "shell", "shell_command", "container.exec"):
        command = args.get("cmd", args.get("command"))
        if isinstance(command, list):
            words = [w for w in command if isinstance(w, str)]
            # ["bash", "-lc", "git status"]: the script is the command.
            command = (
                words[-1] if len(words) >= 3 and words[1] in ("-lc", "-c") else " ".join(words)
            )
        return ("Bash", {"command": command}) if isinstance(command, str) else (None, {})
    if name == "apply_patch":
        patch = args.get("input", args.get("patch"))
        return "apply_patch", {"command": patch} if isinstance(patch, str) else {}
    if name == "update_plan":
        plan = args.get("plan") if isinstance(args.get("plan"), list) else []
        todos = [
            {"content": step.get("step"), "status": step.get("status")}
            for step in plan
            if isinstance(step, dict)
        ]
        return "TodoWrite", {"todos": todos}
    return (name or None), args


def _codex_output(raw: Any) -> tuple[int | None, str]:
    """(exit code if stated, output text) of a call's output: the text Codex shows the model
    (``Process exited with code N ... Output:\\n...``) or an older JSON document."""
    if isinstance(raw, dict):
        raw = raw.get("content", raw.get("output", ""))
    if isinstance(raw, list):
        raw = " ".join(str(b.get("text", "")) for b in raw if isinstance(b, dict))
    if not isinstance(raw, str):
        return None, ""
    if raw.startswith("{"):
        try:
            doc = json.loads(raw)
        except ValueError:
            doc = None
        if isinstance(doc, dict) and "output" in doc:
            meta = doc.get("metadata")
            code = meta.get("exit_code") if isinstance(meta, dict) else None
            return (code if isinstance(code, int) else None), str(doc.get("output") or "")
    code = None
    marker = "Process exited with code "
    at = raw.find(marker)
    if at == -1:
        marker = "Exit code: "
        at = raw.find(marker)
    if at != -1:
        digits = raw[at + len(marker) :].split("\n", 1)[0].strip()
        code = int(digits) if digits.lstrip("-").isdigit() else None
    head, sep, body = raw.partition("Output:\n")
    return code, body if sep and len(head) < 400 else raw


def text_of(value: Any) -> str:
    """A string, or the ``text`` of a list of parts (``[{"text": ...}]``), stripped; a model's
    thought parts (``"thought": true``) are not its words."""
    if isinstance(value, str):
        return value.strip()
    if not isinstance(value, list):
        return ""
    return "\n".join(
        p["text"].strip()
        for p in value
        if isinstance(p, dict) and isinstance(p.get("text"), str) and p["text"].strip()
        and not p.get("thought")
    )  # fmt: skip


# -- Gemini CLI ------------------------------------------------------------------------------

_GEMINI_NOT_PROMPTS = ("<session_context>", "<state_snapshot>")
_FINAL = frozenset({"success", "error", "cancelled"})


def read_gemini(path: Path, offset: int, state: dict[str, Any]) -> Chunk:
    """A Gemini CLI chat (``~/.gemini/tmp/<project>/chats/session-*.json[l]``), read whole
    each time it changed: later lines rewrite earlier messages. Tool calls are keyed by
    their ids, so reading them again stores nothing twice."""
    data, _ = _read_bytes(path, 0, 512 * 1024 * 1024)
    messages: dict[str, dict[str, Any]] = {}
    header: dict[str, Any] = {}
    snapshots: set[str] = set()
    if path.suffix == ".json":
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError) as exc:
            raise Unreadable(f"not JSON ({exc})") from exc
        if not isinstance(doc, dict) or not isinstance(doc.get("messages"), list):
            raise Unreadable("no messages list")
        header = doc
        for message in doc["messages"]:
            if isinstance(message, dict) and isinstance(message.get("id"), str):
                messages[message["id"]] = message
        end = len(data)
    else:
        end = data.rfind(b"\n") + 1
        good = 0
        for raw in data[:end].split(b"\n"):
            if not raw.strip():
                continue
            if raw.startswith(b'{"$set"') and b'"messages"' not in raw[:40]:
                good += 1  # lastUpdated and the like
                continue
            try:
                entry = json.loads(raw)
            except (ValueError, RecursionError):
                continue
            if not isinstance(entry, dict):
                continue
            good += 1
            update = entry.get("$set")
            if isinstance(update, dict):
                listed = update.get("messages")
                if isinstance(listed, list):
                    if b"<state_snapshot>" in raw:
                        # A resume rewrites the history with the same snapshot: count each
                        # snapshot once.
                        snapshots |= {
                            json.dumps(m.get("content"), sort_keys=True)
                            for m in listed
                            if isinstance(m, dict) and "<state_snapshot>" in json.dumps(m)
                        }
                    for message in listed:
                        if isinstance(message, dict) and isinstance(message.get("id"), str):
                            messages.setdefault(message["id"], message)
                continue
            if "sessionId" in entry and "type" not in entry:
                header = header or entry
            elif isinstance(entry.get("id"), str) and "type" in entry:
                messages[entry["id"]] = entry  # a later version replaces an earlier one
        if good == 0 and data.strip():
            raise Unreadable("no JSON line")
    calls: list[tuple[int, dict[str, Any]]] = []
    said: tuple[int, str] | None = None
    for message in messages.values():
        ms = iso_ms(str(message.get("timestamp") or ""))
        kind = message.get("type")
        if kind == "user":
            text = text_of(message.get("content"))
            if text and not text.lstrip().startswith(_GEMINI_NOT_PROMPTS):
                if said:
                    calls.append((said[0], _stop(said[1])))
                    said = None
                calls.append((ms, {"hook_event_name": "BeforeAgent", "prompt": text}))
        elif kind == "gemini":
            for tool in message.get("toolCalls") or []:
                if isinstance(tool, dict) and tool.get("status") in _FINAL:
                    payload = _gemini_call(tool)
                    if payload:
                        calls.append((iso_ms(str(tool.get("timestamp") or "")) or ms, payload))
            content = message.get("content")
            if isinstance(content, str) and content.strip():
                said = (ms, content.strip())
    if said:
        calls.append((said[0], _stop(said[1])))
    root = path.parent.parent / ".project_root"
    try:
        cwd = root.read_text(encoding="utf-8").strip() or None
    except OSError:
        cwd = None
    return Chunk(
        calls=calls,
        resume=end,
        session_id=_s(header.get("sessionId")),
        cwd=cwd,
        compactions=len(snapshots),
        nbytes=len(data),
        done=True,
    )


def _stop(text: str) -> dict[str, Any]:
    return {"hook_event_name": "AfterAgent", "prompt_response": text}


def _untrusted(text: str) -> str:
    """Gemini's tool output without the ``<untrusted_context>`` wrapper it adds."""
    text = text.strip()
    if text.startswith("<untrusted_context>") and text.endswith("</untrusted_context>"):
        text = text[len("<untrusted_context>") : -len("</untrusted_context>")].strip()
    return text.removeprefix("Output: ")


def _gemini_call(tool: dict[str, Any]) -> dict[str, Any] | None:
    """The AfterTool payload of one finished tool call, as Gemini's hook sends it."""
    name = _s(tool.get("name"))
    if name is None:
        return None
    output = ""
    for result in tool.get("result") or []:
        function = result.get("functionResponse") if isinstance(result, dict) else None
        body = function.get("response") if isinstance(function, dict) else None
        if isinstance(body, dict):
            value = body.get("output", body.get("error", ""))
            output += _untrusted(value if isinstance(value, str) else json.dumps(value))
    display = tool.get("resultDisplay")
    response: dict[str, Any] = {
        "llmContent": output,
        "returnDisplay": display if isinstance(display, str) else "",
    }
    if tool.get("status") == "error":
        response["error"] = output or "failed"
    return {
        "hook_event_name": "AfterTool",
        "tool_name": name,
        "tool_input": tool.get("args") if isinstance(tool.get("args"), dict) else {},
        "tool_response": response,
        "tool_use_id": _s(tool.get("id")),
    }


def _s(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
