"""Hook tee for capturing payloads: ``tee_hook.py OUTDIR -- COMMAND...`` saves stdin to
``OUTDIR/NN-Event-Detail.json`` and the hook's stdout beside it, then passes everything through."""

import fcntl
import json
import subprocess
import sys
from pathlib import Path


def main() -> int:
    out, real = Path(sys.argv[1]), sys.argv[sys.argv.index("--") + 1 :]
    raw = sys.stdin.buffer.read()
    try:
        payload = json.loads(raw)
    except ValueError:
        payload = {}
    event = payload.get("hook_event_name") or payload.get("hookEventName") or "Unknown"
    detail = payload.get("tool_name") or payload.get("source") or payload.get("trigger") or ""
    with (out / ".counter").open("a+") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        fh.seek(0)
        n = int(fh.read().strip() or 0) + 1
        fh.seek(0)
        fh.truncate()
        fh.write(str(n))
    name = f"{n:02d}-{event}" + (f"-{detail}" if detail else "")
    (out / f"{name}.json").write_bytes(raw)
    proc = subprocess.run(real, input=raw, capture_output=True)
    if proc.stdout.strip():
        (out / f"{name}.out.json").write_bytes(proc.stdout)
    sys.stdout.buffer.write(proc.stdout)
    sys.stderr.buffer.write(proc.stderr)
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
