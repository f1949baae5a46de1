// Test-only OpenCode plugin (copied into the scratch project with CTXMODE_E2E_CAPTURE): writes
// what OpenCode hands its plugins to $CTXMODE_E2E_OPENCODE_RAW/NN-hook[-tool].json, the
// objects ctxmode's own plugin translates.
import { appendFileSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const OUT = process.env.CTXMODE_E2E_OPENCODE_RAW;

// Bus events worth keeping (the others stream every part and status change).
const EVENTS = new Set(["session.created", "session.idle", "session.compacted", "session.deleted", "session.error"]);

function save(directory, hook, input, output) {
  if (!OUT) return;
  if (hook === "event" && !EVENTS.has(input && input.event && input.event.type)) return;
  try {
    const counter = join(OUT, ".raw-counter");
    let n = 0;
    try {
      n = Number(readFileSync(counter, "utf8")) || 0;
    } catch {}
    n += 1;
    writeFileSync(counter, String(n));
    const detail = (input && (input.tool || (input.event && input.event.type))) || "";
    const name = `${String(n).padStart(3, "0")}-${hook}${detail ? "-" + detail : ""}.json`;
    writeFileSync(join(OUT, name), JSON.stringify({ hook, directory, input, output }, null, 2));
  } catch (err) {
    appendFileSync(join(OUT, "errors.log"), String(err) + "\n");
  }
}

const HOOKS = [
  "tool.execute.before",
  "tool.execute.after",
  "chat.message",
  "experimental.session.compacting",
  "experimental.text.complete",
];

export const CaptureRaw = async ({ directory }) => {
  const hooks = { event: async (input) => save(directory, "event", input, null) };
  for (const hook of HOOKS) {
    hooks[hook] = async (input, output) => save(directory, hook, input, output);
  }
  return hooks;
};
