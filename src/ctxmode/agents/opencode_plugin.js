// ctxmode plugin for OpenCode: forwards session events to `python -m ctxmode hook EVENT --agent opencode`.
// Written by `ctxmode install opencode`; `ctxmode uninstall opencode` removes it, and reinstalling
// overwrites local edits. OpenCode has no stdin/stdout hooks, so this file translates its plugin
// hooks into the JSON payloads ctxmode's hook runner reads. It never throws: ctxmode fails open.
import { spawn } from "node:child_process";

const PYTHON = "__CTXMODE_PYTHON__";
const TIMEOUT_MS = 10000;

function runHook(event, payload) {
  return new Promise((resolve) => {
    let out = "";
    let child;
    try {
      child = spawn(PYTHON, ["-m", "ctxmode", "hook", event, "--agent", "opencode"], {
        stdio: ["pipe", "pipe", "ignore"],
      });
    } catch {
      resolve(null);
      return;
    }
    const timer = setTimeout(() => child.kill(), TIMEOUT_MS);
    child.stdout.on("data", (chunk) => {
      out += chunk;
    });
    child.on("error", () => {
      clearTimeout(timer);
      resolve(null);
    });
    child.on("close", () => {
      clearTimeout(timer);
      try {
        resolve(out.trim() ? JSON.parse(out) : null);
      } catch {
        resolve(null);
      }
    });
    child.stdin.on("error", () => {});
    child.stdin.end(JSON.stringify(payload));
  });
}

function additionalContext(result) {
  const text = result && result.hookSpecificOutput && result.hookSpecificOutput.additionalContext;
  return typeof text === "string" && text ? text : null;
}

export const CtxmodePlugin = async ({ directory, worktree }) => {
  const cwd = directory || worktree;
  const base = (sessionID, name) => ({ session_id: sessionID, cwd, hook_event_name: name });
  // sessionID -> the snapshot waiting for that session's compaction summary.
  const summaries = new Map();
  // sessionID -> the startup brief (a promise: the event may still be running) waiting for
  // the session's first prompt.
  const briefs = new Map();
  // sessionID -> the last reply's text, for the Stop hook (session.idle carries none).
  const replies = new Map();
  return {
    "tool.execute.before": async (input, output) => {
      await runHook("pre-tool-use", {
        ...base(input.sessionID, "PreToolUse"),
        tool_name: input.tool,
        tool_input: (output && output.args) || {},
        tool_use_id: input.callID,
      });
    },
    "tool.execute.after": async (input, output) => {
      // Built-in tools give {title, output, metadata} (bash: metadata.exit is the exit code);
      // MCP tools give the MCP result itself ({content, structuredContent, isError}).
      const result = output || {};
      const builtin = typeof result.output === "string";
      const meta = (builtin && result.metadata) || {};
      const reply = await runHook("post-tool-use", {
        ...base(input.sessionID, "PostToolUse"),
        tool_name: input.tool,
        tool_input: input.args || {},
        tool_use_id: input.callID,
        tool_response: builtin ? result.output : output || null,
        ...(typeof meta.exit === "number" ? { exit_code: meta.exit } : {}),
      });
      // Knowledge linked to the file just read or edited: the model reads it with the result.
      const linked = additionalContext(reply);
      if (linked && builtin) result.output = `${result.output}\n\n${linked}`;
    },
    // The user's words (not the synthetic parts OpenCode adds for attachments) to ctxmode;
    // what it answers (the startup brief, a suggestion) follows them in the same text part,
    // so the model reads it once, in the history.
    "chat.message": async (input, output) => {
      const texts = ((output && output.parts) || []).filter(
        (part) => part && part.type === "text" && typeof part.text === "string" && !part.synthetic,
      );
      const prompt = texts.map((part) => part.text).join("\n");
      if (!prompt) return;
      const reply = await runHook("user-prompt-submit", {
        ...base(input.sessionID, "UserPromptSubmit"),
        prompt,
      });
      const brief = await briefs.get(input.sessionID);
      briefs.delete(input.sessionID);
      const extra = [brief, additionalContext(reply)].filter(Boolean);
      if (extra.length) {
        const last = texts[texts.length - 1];
        last.text = `${last.text}\n\n${extra.join("\n")}`;
      }
    },
    // Compaction: store the snapshot; it is appended to the summary the compaction writes
    // (the next text OpenCode completes in that session), which replaces the history: the
    // model then reads it once in every later request, and a resume replays that copy.
    "experimental.session.compacting": async (input) => {
      await runHook("pre-compact", { ...base(input.sessionID, "PreCompact"), trigger: "auto" });
      const restored = additionalContext(
        await runHook("session-start", { ...base(input.sessionID, "SessionStart"), source: "compact" }),
      );
      if (restored) summaries.set(input.sessionID, restored);
    },
    "experimental.text.complete": async (input, output) => {
      if (!input || !output || typeof output.text !== "string") return;
      const restored = summaries.get(input.sessionID);
      if (!restored) {
        replies.set(input.sessionID, output.text);
        return;
      }
      summaries.delete(input.sessionID);
      output.text = `${output.text}\n\n${restored}`;
    },
    event: async ({ event }) => {
      const props = (event && event.properties) || {};
      const id = props.sessionID || (props.info && props.info.id);
      if (!id) return;
      if (event.type === "session.created") {
        const brief = runHook("session-start", { ...base(id, "SessionStart"), source: "startup" });
        briefs.set(id, brief.then(additionalContext));
        await brief;
      } else if (event.type === "session.idle") {
        const last = replies.get(id);
        replies.delete(id);
        await runHook("stop", {
          ...base(id, "Stop"),
          stop_hook_active: false,
          ...(last ? { last_assistant_message: last } : {}),
        });
      } else if (event.type === "session.deleted") {
        await runHook("session-end", { ...base(id, "SessionEnd"), reason: "other" });
      }
    },
  };
};
