"""Per-agent normalization: one hook payload (already parsed JSON) -> ``NormalizedHookEvent``.

Used by the hooks (``ctxmode.hooks``) and by the import of past transcripts
(``ctxmode.history``), which rebuilds hook payloads from them: both record a call alike.

Each adapter knows its agent's field names (``session_id``/``sessionId``/``conversation_id``,
``hook_event_name``/``hookEventName``, ``cwd``/``workspace_roots``), event names and tool names,
and maps them onto the shared vocabulary of ``ctxmode.sessions.events``. Adapters never raise on odd
payloads: missing fields become ``None``/empty and unknown events return ``None``.
"""

from __future__ import annotations

import json

from ctxmode.core.vocab import AGENTS as AGENTS
from ctxmode.sessions.events import NormalizedHookEvent

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time (see _lean)
if TYPE_CHECKING:
    from typing import Any


#: Event names of every agent (lowercased, without ``-``/``_``/``.``) -> hook kind.
_EVENT_KINDS: dict[str, str] = {
    "pretooluse": "pre_tool_use",
    "beforetool": "pre_tool_use",
    "beforeshellexecution": "pre_tool_use",
    "beforemcpexecution": "pre_tool_use",
    "beforereadfile": "pre_tool_use",
    "toolexecutebefore": "pre_tool_use",
    "posttooluse": "post_tool_use",
    "aftertool": "post_tool_use",
    "aftershellexecution": "post_tool_use",
    "afterfileedit": "post_tool_use",
    "aftermcpexecution": "post_tool_use",
    "toolexecuteafter": "post_tool_use",
    "posttoolusefailure": "post_tool_use_failure",
    "userpromptsubmit": "user_prompt",
    "beforeagent": "user_prompt",
    "beforesubmitprompt": "user_prompt",
    "chatmessage": "user_prompt",
    "precompact": "pre_compact",
    "precompress": "pre_compact",
    "experimentalsessioncompacting": "pre_compact",
    "postcompact": "post_compact",
    "sessioncompacted": "post_compact",
    "sessionstart": "session_start",
    "sessioncreated": "session_start",
    "stop": "stop",
    "afteragent": "stop",
    "sessionidle": "stop",
    "sessionend": "session_end",
    "subagentstart": "subagent_start",
    "subagentstop": "subagent_stop",
}

#: Tool names of every agent (lowercased) -> the canonical name ``ctxmode.sessions.events`` expects.
_TOOLS: dict[str, str] = {
    "bash": "Bash",
    "shell": "Bash",
    "powershell": "Bash",
    "run_shell_command": "Bash",
    "runterminalcommand": "Bash",
    "run_in_terminal": "Bash",
    "edit": "Edit",
    "replace": "Edit",
    "strreplace": "Edit",
    "str_replace": "Edit",
    "replace_string_in_file": "Edit",
    "editfiles": "Edit",
    "multiedit": "MultiEdit",
    "multi_replace_string_in_file": "MultiEdit",
    "write": "Write",
    "write_file": "Write",
    "create_file": "Write",
    "create": "Write",
    "createfile": "Write",
    "notebookedit": "NotebookEdit",
    "edit_notebook": "NotebookEdit",
    "apply_patch": "apply_patch",
    "applypatch": "apply_patch",
    "read": "Read",
    "read_file": "Read",
    "readfile": "Read",
    "read_many_files": "Read",
    "view": "Read",
    "glob": "Search",
    "grep": "Search",
    "grep_search": "Search",
    "search_file_content": "Search",
    "list_directory": "Search",
    "ls": "Search",
    "file_search": "Search",
    "codebase_search": "Search",
    "webfetch": "WebFetch",
    "web_fetch": "WebFetch",
    "fetch_webpage": "WebFetch",
    "websearch": "WebSearch",
    "web_search": "WebSearch",
    "google_web_search": "WebSearch",
    "todowrite": "TodoWrite",
    "todo_write": "TodoWrite",
    "write_todos": "TodoWrite",
    "manage_todo_list": "TodoWrite",
    "taskcreate": "TaskCreate",
    "taskupdate": "TaskUpdate",
    "agent": "Agent",
    "task": "Agent",
    "invoke_agent": "Agent",
    "runsubagent": "Agent",
    "askuserquestion": "AskUserQuestion",
    "ask_user": "AskUserQuestion",
    "exitplanmode": "ExitPlanMode",
    "exit_plan_mode": "ExitPlanMode",
    "enterplanmode": "EnterPlanMode",
    "enter_plan_mode": "EnterPlanMode",
    "skill": "Skill",
    "activate_skill": "Skill",
}

#: camelCase tool-input keys (VS Code, OpenCode) -> the snake_case names extraction reads.
_INPUT_KEYS = {
    "filePath": "file_path",
    "oldString": "old_string",
    "newString": "new_string",
    "notebookPath": "notebook_path",
    "newSource": "new_source",
}

_HEX = frozenset("0123456789abcdefABCDEF")
_UUID_DASHES = (8, 13, 18, 23)


def find_uuid(text: str) -> str | None:
    """The leftmost ``8-4-4-4-12`` hex UUID in ``text`` (a scan: no regex to compile per hook)."""
    dash = text.find("-", 8)
    while dash != -1:
        candidate = text[dash - 8 : dash + 28]
        if (
            len(candidate) == 36
            and all(candidate[i] == "-" for i in _UUID_DASHES)
            and all(c in _HEX for i, c in enumerate(candidate) if i not in _UUID_DASHES)
        ):
            return candidate
        dash = text.find("-", dash + 1)
    return None


#: Separators dropped from event names (``str.translate``: no regex compile per hook call).
_NAME_PUNCTUATION = str.maketrans("", "", "-_.")


def event_kind(name: str | None) -> str | None:
    """Hook kind of an event name in any agent's spelling (``post-tool-use``, ``AfterTool``...)."""
    if not name:
        return None
    return _EVENT_KINDS.get("".join(name.translate(_NAME_PUNCTUATION).split()).lower())


def canonical_tool(name: str | None) -> str | None:
    """Canonical tool name; MCP tools (``mcp__server__tool``) and unknown names pass through."""
    if not name:
        return None
    if name.startswith("mcp__"):
        return name
    return _TOOLS.get(name.lower(), name)


def _gemini_mcp_name(name: str, payload: dict[str, Any]) -> str:
    """Gemini's ``mcp_<server>_<tool>`` as ``mcp__<server>__<tool>`` (the server named by
    ``mcp_context`` when present: server names may hold underscores)."""
    context = payload.get("mcp_context")
    if isinstance(context, dict):
        server, tool = _s(context.get("server_name")), _s(context.get("tool_name"))
        if server and tool:
            return f"mcp__{server}__{tool}"
    server, _, tool = name[4:].partition("_")
    return f"mcp__{server}__{tool}" if server and tool else name


#: Wrappers and fences of text ctxmode (or the agent, around ctxmode's text) injected: never
#: the user's words. Gemini puts SessionStart context in front of the next prompt as
#: ``<hook_context>...</hook_context>`` (with ``<``/``>`` escaped inside), Qwen Code a
#: prompt hook's context as ``<qwen:user-prompt-submit-context>...``.
_INJECTED_BLOCKS: tuple[tuple[str, str], ...] = (
    ("<hook_context>", "</hook_context>"),
    ("<qwen:user-prompt-submit-context>", "</qwen:user-prompt-submit-context>"),
    ('<ctxmode_data kind="', "</ctxmode_data>"),
    ('&lt;ctxmode_data kind="', "&lt;/ctxmode_data&gt;"),
    ("&lt;ctxmode_data kind=&quot;", "&lt;/ctxmode_data&gt;"),
    ('[ctxmode_data kind="', "[/ctxmode_data]"),
)
_MORE_DETAIL = "More detail on request: run `ctxmode"


def strip_injected(text: str) -> str:
    """``text`` without ctxmode's injected blocks (and the line that follows each).

    A block is removed only whole: its opening as ctxmode writes it (``kind="``) through its
    closing tag. A prompt that merely mentions the fence word (``how does <ctxmode_data work``)
    or holds an opening without a close is the user's text and is kept.
    """
    for start, end in _INJECTED_BLOCKS:
        at = text.find(start)
        while at != -1:
            stop = text.find(end, at)
            if stop == -1:
                break
            text = text[:at] + text[stop + len(end) :]
            at = text.find(start, at)
    while _MORE_DETAIL in text:
        at = text.find(_MORE_DETAIL)
        newline = text.find("\n", at)
        text = text[:at] + (text[newline + 1 :] if newline != -1 else "")
    return text.strip()


def _exit_code(text: str) -> int | None:
    """N of the last ``Exit Code: N`` line Gemini appends to a shell result."""
    at = text.rfind("Exit Code: ")
    if at == -1:
        return None
    digits = text[at + 11 : at + 15].split("\n", 1)[0].strip()
    return int(digits) if digits.lstrip("-").isdigit() else None


def _s(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _first(payload: dict[str, Any], *keys: str) -> str | None:
    for key in keys:
        value = _s(payload.get(key))
        if value:
            return value
    return None


def _as_dict(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return {_INPUT_KEYS.get(str(k), str(k)): v for k, v in value.items()}
    if isinstance(value, str) and value.lstrip().startswith("{"):
        # Cursor sends MCP tool_input as a JSON string.
        try:
            parsed = json.loads(value)
        except ValueError:
            return {}
        return _as_dict(parsed) if isinstance(parsed, dict) else {}
    return {}


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return int(value)
    return None


#: A session id longer than this is replaced by its digest (agents use UUIDs, 36 characters).
MAX_SESSION_ID_CHARS = 200


def session_id_of(payload: dict[str, Any]) -> str:
    """The UUID in ``transcript_path`` first, then the payload's session id fields."""
    transcript = _s(payload.get("transcript_path")) or _s(payload.get("transcriptPath"))
    if transcript:
        name = transcript.replace("\\", "/").rsplit("/", 1)[-1]
        found = find_uuid(name)
        if found:
            return found.lower()
    sid = _first(payload, "session_id", "sessionId", "sessionID", "conversation_id", "thread-id")
    if sid and len(sid) > MAX_SESSION_ID_CHARS:
        # Stored in seven indexes per event: a huge id would grow the store by its size times
        # that on every call. Its digest keeps one id per session.
        from ctxmode.core._lean import sha256_hex

        return "sid-sha256-" + sha256_hex(sid.encode("utf-8", "surrogatepass"))[:40]
    return sid or "unknown"


def cwd_of(payload: dict[str, Any]) -> str | None:
    """Working directory: ``cwd``, else the first workspace root, else OpenCode's directory."""
    cwd = _first(payload, "cwd", "directory", "worktree")
    if cwd:
        return cwd
    roots = payload.get("workspace_roots") or payload.get("workspaceRoots")
    if isinstance(roots, list) and roots and isinstance(roots[0], str):
        return roots[0]
    return None


def normalize(
    agent: str, event_arg: str | None, payload: dict[str, Any]
) -> NormalizedHookEvent | None:
    """Normalize one payload; ``None`` when the event is not one ctxmode handles."""
    raw_name = _first(payload, "hook_event_name", "hookEventName", "event")
    kind = event_kind(event_arg) or event_kind(raw_name)
    if kind is None:
        return None
    adapter = _ADAPTERS.get(agent, _claude)
    return adapter(kind, raw_name or "", payload)


def _base(agent: str, kind: str, payload: dict[str, Any], **extra: Any) -> NormalizedHookEvent:
    raw_tool = _first(payload, "tool_name", "toolName", "tool")
    tool_input = _as_dict(payload.get("tool_input", payload.get("toolInput", payload.get("args"))))
    response = payload.get("tool_response", payload.get("toolResponse", payload.get("output")))
    error = _s(payload.get("error"))
    if kind == "post_tool_use" and isinstance(response, dict) and _s(response.get("error")):
        # Gemini reports a failed tool through AfterTool with tool_response.error.
        kind, error = "post_tool_use_failure", str(response["error"])
    if kind in ("subagent_start", "subagent_stop"):
        tool_input = {"agent_type": payload.get("agent_type")}
    values: dict[str, Any] = {
        "agent": agent,
        "kind": kind,
        "session_id": session_id_of(payload),
        "cwd": cwd_of(payload),
        "tool_name": canonical_tool(raw_tool),
        "raw_tool_name": raw_tool,
        "tool_input": tool_input,
        "tool_response": response,
        "error": error,
        "tool_use_id": _first(payload, "tool_use_id", "toolUseId", "callID", "generation_id"),
        "duration_ms": _int(payload.get("duration_ms", payload.get("duration"))),
        "prompt": _prompt(payload),
        "prompt_source": _s(payload.get("source")) if kind == "user_prompt" else None,
        "source": _s(payload.get("source")) if kind == "session_start" else None,
        "trigger": _s(payload.get("trigger")),
        "last_assistant_message": _first(
            payload, "last_assistant_message", "prompt_response", "last-assistant-message"
        ),
        "stop_hook_active": payload.get("stop_hook_active") is True,
        "transcript_path": _first(payload, "transcript_path", "transcriptPath"),
    }
    values.update(extra)
    return NormalizedHookEvent(**values)


def _prompt(payload: dict[str, Any]) -> str | None:
    prompt = _s(payload.get("prompt"))
    if prompt and ("ctxmode" in prompt or "<hook_context>" in prompt or "<qwen:" in prompt):
        prompt = strip_injected(prompt) or None
    return prompt


def _claude(kind: str, raw_name: str, payload: dict[str, Any]) -> NormalizedHookEvent:
    return _base("claude-code", kind, payload)


def _codex(kind: str, raw_name: str, payload: dict[str, Any]) -> NormalizedHookEvent:
    ev = _base("codex", kind, payload)
    # Codex's PostToolUse of a shell call carries the output only, no exit code: a failure is
    # told from the output (``failures.looks_failed``: strong signs only).
    if kind == "post_tool_use" and ev.tool_name == "Bash" and isinstance(ev.tool_response, str):
        from ctxmode.sessions.failures import looks_failed

        command = str(ev.tool_input.get("command") or "")
        if looks_failed(ev.tool_response, command):
            return ev._replace(kind="post_tool_use_failure", error=ev.tool_response)
    return ev


def _gemini(kind: str, raw_name: str, payload: dict[str, Any]) -> NormalizedHookEvent:
    extra: dict[str, Any] = {}
    raw_tool = _s(payload.get("tool_name")) or ""
    if raw_tool.startswith("mcp_") and not raw_tool.startswith("mcp__"):
        extra["tool_name"] = _gemini_mcp_name(raw_tool, payload)
    response = payload.get("tool_response")
    if kind == "post_tool_use" and raw_tool == "run_shell_command" and isinstance(response, dict):
        # No exit code field: the shell result's llmContent ends with "Exit Code: N".
        content = response.get("llmContent")
        text = content if isinstance(content, str) else ""
        code = _exit_code(text)
        if code:
            display = response.get("returnDisplay")
            output = display if isinstance(display, str) and display else text
            extra.update(kind="post_tool_use_failure", error=f"Exit code {code}\n{output}")
    return _base("gemini-cli", extra.pop("kind", kind), payload, **extra)


def _qwen(kind: str, raw_name: str, payload: dict[str, Any]) -> NormalizedHookEvent:
    # UserPromptSubmit also fires before each tool-result continuation (``prompt`` empty or the
    # model-bound text); ``submitted_prompt`` is what the user typed, when Qwen knows it.
    extra: dict[str, Any] = {}
    if kind == "user_prompt":
        typed = _s(payload.get("submitted_prompt"))
        extra["prompt"] = _prompt({"prompt": typed}) if typed else _prompt(payload)
    return _base("qwen-code", kind, payload, **extra)


#: Copilot CLI's tool-input keys -> the names extraction reads.
_COPILOT_KEYS = {"path": "file_path", "old_str": "old_string", "new_str": "new_string",
                 "file_text": "content"}  # fmt: skip
_COPILOT_FAILED = frozenset({"failure", "error", "denied", "rejected"})


def _copilot(kind: str, raw_name: str, payload: dict[str, Any]) -> NormalizedHookEvent:
    # PascalCase events: snake_case payloads, Claude's tool names (``Bash``, ``Read``,
    # ``Edit``), the result as ``tool_result {result_type, text_result_for_llm}``; MCP tools
    # are ``<server>-<tool>``; SessionStart says ``new`` for a fresh session.
    extra: dict[str, Any] = {}
    raw_tool = _s(payload.get("tool_name")) or ""
    if "-" in raw_tool and raw_tool.lower() not in _TOOLS and not raw_tool.startswith("mcp__"):
        server, _, tool = raw_tool.partition("-")
        extra["tool_name"] = f"mcp__{server}__{tool}"
    tool_input = payload.get("tool_input")
    if isinstance(tool_input, dict):
        extra["tool_input"] = {_COPILOT_KEYS.get(str(k), str(k)): v for k, v in tool_input.items()}
    result = payload.get("tool_result")
    if isinstance(result, dict):
        text = result.get("text_result_for_llm")
        output = text if isinstance(text, str) else ""
        extra["tool_response"] = output
        if kind == "post_tool_use" and result.get("result_type") in _COPILOT_FAILED:
            extra.update(kind="post_tool_use_failure", error=output or str(result))
        elif kind == "post_tool_use" and canonical_tool(raw_tool) == "Bash":
            # No exit code field: the shell result ends "<shellId: N completed with exit code C>".
            code = _shell_exit(output)
            if code:
                extra.update(kind="post_tool_use_failure", error=f"Exit code {code}\n{output}")
    if kind == "session_start":
        source = _s(payload.get("source"))
        extra["source"] = "startup" if source in (None, "new") else source
    return _base("copilot-cli", extra.pop("kind", kind), payload, **extra)


def _kimi(kind: str, raw_name: str, payload: dict[str, Any]) -> NormalizedHookEvent:
    # Claude's tool names with ``path`` for the file; ``tool_output`` (cut to 2000 chars) or
    # ``error {code, message}``; the prompt as content parts.
    extra: dict[str, Any] = {}
    tool_input = payload.get("tool_input")
    if isinstance(tool_input, dict):
        extra["tool_input"] = {("file_path" if k == "path" else str(k)): v
                               for k, v in tool_input.items()}  # fmt: skip
    if "tool_output" in payload:
        extra["tool_response"] = payload.get("tool_output")
    error = payload.get("error")
    if isinstance(error, dict):
        extra["error"] = _s(error.get("message")) or _s(error.get("code")) or "error"
    prompt = payload.get("prompt")
    if isinstance(prompt, list):
        typed = "\n".join(
            str(p.get("text")) for p in prompt if isinstance(p, dict) and p.get("type") == "text"
        )
        extra["prompt"] = _prompt({"prompt": typed})
    return _base("kimi-code", kind, payload, **extra)


def _shell_exit(text: str) -> int | None:
    """C of Copilot CLI's last ``completed with exit code C>`` shell status line."""
    at = text.rfind("completed with exit code ")
    if at == -1:
        return None
    digits = text[at + 25 : at + 32].split(">", 1)[0].strip()
    return int(digits) if digits.lstrip("-").isdigit() else None


def _vscode(kind: str, raw_name: str, payload: dict[str, Any]) -> NormalizedHookEvent:
    response = payload.get("tool_response")
    # VS Code's SessionStart says "new"; treat it as a fresh start.
    source = _s(payload.get("source"))
    extra: dict[str, Any] = {}
    if kind == "session_start":
        extra["source"] = "startup" if source in (None, "new") else source
    if isinstance(response, str):
        extra["tool_response"] = response
    return _base("vscode", kind, payload, **extra)


def _cursor(kind: str, raw_name: str, payload: dict[str, Any]) -> NormalizedHookEvent:
    name = raw_name.translate(_NAME_PUNCTUATION).lower()
    extra: dict[str, Any] = {}
    if name in ("aftershellexecution", "beforeshellexecution"):
        extra = {
            "tool_name": "Bash",
            "raw_tool_name": "shell",
            "tool_input": {"command": payload.get("command", "")},
            "tool_response": payload.get("output"),
        }
    elif name == "afterfileedit":
        edits = payload.get("edits") if isinstance(payload.get("edits"), list) else []
        extra = {
            "tool_name": "MultiEdit",
            "raw_tool_name": "edit",
            "tool_input": {"file_path": payload.get("file_path", ""), "edits": edits},
        }
    elif name in ("aftermcpexecution", "beforemcpexecution"):
        tool = _s(payload.get("tool_name")) or "tool"
        server = _s(payload.get("server_name")) or "cursor"
        extra = {
            "tool_name": tool if tool.startswith("mcp__") else f"mcp__{server}__{tool}",
            "tool_response": payload.get("result_json"),
        }
    elif name == "beforereadfile":
        extra = {"tool_name": "Read", "tool_input": {"file_path": payload.get("file_path", "")}}
    if kind == "stop" and payload.get("status") == "error":
        extra["last_assistant_message"] = None
    return _base("cursor", kind, payload, **extra)


def _opencode(kind: str, raw_name: str, payload: dict[str, Any]) -> NormalizedHookEvent:
    # ctxmode's plugin forwards {hook_event_name, session_id, cwd, tool_name, tool_input,
    # tool_response, exit_code (bash)}; older plugins {sessionID, tool, args, output, directory}.
    extra: dict[str, Any] = {}
    output = payload.get("output")
    if isinstance(output, dict) and "output" in output:
        extra["tool_response"] = output.get("output")
    response = extra.get("tool_response", payload.get("tool_response"))
    raw_tool = _first(payload, "tool_name", "tool") or ""
    if "_" in raw_tool and _is_mcp_result(response) and not raw_tool.startswith("mcp__"):
        # OpenCode names MCP tools <server>_<tool> (``ctxmode_write_context``).
        server, _, tool = raw_tool.partition("_")
        extra["tool_name"] = f"mcp__{server}__{tool}"
    code = _int(payload.get("exit_code"))
    if kind == "post_tool_use" and code:
        output_text = response if isinstance(response, str) else ""
        extra.update(kind="post_tool_use_failure", error=f"Exit code {code}\n{output_text}")
    if kind == "user_prompt":
        prompt = _prompt(payload)
        extra["prompt"] = _unquoted(prompt) if prompt else None
    return _base("opencode", extra.pop("kind", kind), payload, **extra)


def _is_mcp_result(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("content"), list)


def _unquoted(prompt: str) -> str:
    """``opencode run "a b"`` sends the message as ``"a b"`` (each argument holding a space is
    quoted, its ``"`` escaped): the words the user typed, without that quoting."""
    inner = prompt[1:-1]
    if len(prompt) < 2 or prompt[0] != '"' or prompt[-1] != '"' or " " not in inner:
        return prompt
    if inner.replace('\\"', "").count('"'):
        return prompt  # quotes inside that OpenCode would have escaped: not its quoting
    return inner.replace('\\"', '"')


_ADAPTERS = {
    "claude-code": _claude,
    "codex": _codex,
    "gemini-cli": _gemini,
    "vscode": _vscode,
    "cursor": _cursor,
    "opencode": _opencode,
    "qwen-code": _qwen,
    "copilot-cli": _copilot,
    "kimi-code": _kimi,
}


def call_key(kind: str, payload: dict[str, Any]) -> str:
    """The idempotency key of one hook call: its ``tool_use_id`` for a finished tool call
    (Claude Code, Codex: unique per call, whoever reports it), else its canonical payload."""
    from ctxmode.core._lean import sha256_hex

    ident = payload.get("tool_use_id")
    kimi_id = payload.get("tool_call_id")  # Kimi Code: the provider's id, maybe only per turn
    finished = kind in ("post_tool_use", "post_tool_use_failure")
    if finished and isinstance(ident, str) and ident:
        basis = f"{kind}\0tool_use_id\0{ident}"
    elif finished and isinstance(kimi_id, str) and kimi_id:
        inputs = json.dumps(payload.get("tool_input"), sort_keys=True, separators=(",", ":"))
        basis = f"{kind}\0tool_call_id\0{payload.get('session_id')}\0{kimi_id}\0{inputs}"
    else:
        # Canonical JSON, not the raw bytes: an agent that re-serialises a retried payload
        # (other key order or spacing) still sends the same call.
        basis = f"{kind}\0{json.dumps(payload, sort_keys=True, separators=(',', ':'))}"
    return sha256_hex(basis.encode())[:32]
