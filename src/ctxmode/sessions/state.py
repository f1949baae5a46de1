"""What a session's state is, as candidates for the resume snapshot (``sessions.snapshot``).

The input is the session's whole history, not the events since the last compaction: what
the first snapshot kept and is still true stays available to the next ones, and what is
resolved or superseded leaves. Each category turns its events into the current state:
- requests: the newest, the session's first (its goal) and a few more, without the clauses a
  later correction reversed; the corrections still in force (``sessions.corrections``);
- tasks: the open ones; finished ones counted (``<tasks done="N">``) and listed only when the
  budget has room to spare, deleted ones gone;
- errors: the latest failure of each target nothing fixed since, as its informative lines
  (a test id, the ``E`` line, ``file(line,col): error TS...``), without a summary line the
  terminal cut;
- decisions: those stored in the store during the session (its current text and id), then
  the ones stated in the session; constraints the user stated and no correction reversed;
- files: edited ones, newest first, with their latest change as a detail; reads come last;
- git: the last commit (message, branch and hash git printed) and the branch.

Hook path (pre-compact): standard library and ``core`` only.
"""

from __future__ import annotations

import json

from ctxmode.sessions.budget import Item
from ctxmode.sessions.events import CATEGORIES

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time (see _lean)
if TYPE_CHECKING:
    from typing import Any, NamedTuple

    from ctxmode.core.db import Database

    #: (id, type, data) of a category's events, oldest first.
    Events = list[tuple[int, str, dict[str, Any]]]
else:
    from ctxmode.core._lean import NamedTuple

__all__ = ["REQUEST_CHARS", "SECTIONS", "Candidates", "candidates", "decode_all"]


def _shorten(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(1, limit - 1)] + "…"


#: Category -> (section tag, item tag, how many of the newest candidates to consider).
SECTIONS: dict[str, tuple[str, str, int]] = {
    "prompt": ("requests", "request", 3),
    "correction": ("corrections", "correction", 6),
    "task": ("tasks", "task", 15),
    "file": ("files", "file", 20),
    "plan": ("plans", "plan", 1),
    "rule": ("rules", "rule", 6),
    "decision": ("decisions", "decision", 8),
    "knowledge": ("knowledge", "context", 6),
    "git": ("git", "action", 4),
    "error": ("errors", "error", 5),
    "error_resolution": ("resolutions", "resolved", 3),
    "constraint": ("constraints", "constraint", 5),
    "blocker": ("blockers", "blocker", 3),
    "rejected_approach": ("rejected", "rejected", 3),
    "environment": ("environment", "env", 6),
    "agent_finding": ("findings", "finding", 4),
    "iteration_loop": ("loops", "loop", 2),
    "latency": ("latency", "slow", 2),
    "mcp_tool": ("mcp", "call", 3),
    "subagent": ("subagents", "subagent", 3),
    "skill": ("skills", "skill", 3),
    "external_ref": ("refs", "ref", 4),
    "role": ("roles", "role", 1),
    "intent": ("intents", "intent", 1),
    "data": ("data", "item", 4),
}
#: Events read per category: files and tasks need history to aggregate, errors to pair with
#: their resolutions; other sections keep a few newest distinct items, so three times what
#: they show leaves room for repeats (a pre-compact hook decodes every row it reads).
_LOAD_LIMIT = {
    **{c: max(10, 3 * shown) for c, (_s, _i, shown) in SECTIONS.items() if c in CATEGORIES},
    # The whole history of what a later compaction must still know (corrections reverse
    # prompts of any age; a decision or finding stays true until replaced).
    "prompt": 200,
    "decision": 60,
    "constraint": 60,
    "rejected_approach": 30,
    "agent_finding": 20,
    "git": 60,
    "file": 400,
    "task": 600,
    "error": 120,
    "error_resolution": 120,
}
#: Data field shown as element text (the rest become attributes), first present wins.
_TEXT_FIELDS = ("text", "message", "command", "subject", "description", "url", "query", "args")

#: Categories whose event type says something (error class, install/cwd/export ...).
_SHOW_TYPE = frozenset({"error", "environment", "subagent", "intent", "plan"})
#: Data fields left out of the snapshot (redundant with the element or the section).
_HIDDEN_FIELDS = frozenset({"tool", "key"})
#: Element text limits per category (characters); the newest request gets ``REQUEST_CHARS``.
_TEXT_CHARS = {
    "prompt": 160,
    "plan": 300,
    "agent_finding": 200,
    "data": 100,
    "mcp_tool": 80,
    # What broke: the failing test, its message and the exception (``sessions.failures``).
    "error": 320,
    "error_resolution": 320,
}
REQUEST_CHARS = 300


# -- loading ---------------------------------------------------------------------------------


def _load(store: Database, session_id: str) -> dict[str, Events]:
    """Newest events per category, as (id, type, data), oldest first."""
    out: dict[str, list[tuple[int, str, dict[str, Any]]]] = {}
    for category, limit in _LOAD_LIMIT.items():
        # One indexed range per category (idx_events_category): a window function over the
        # whole session cost ~4 ms at 1,000 events, one UNION ALL statement 2.5x these.
        rows = store.conn.execute(
            "SELECT id, type, data FROM events WHERE session_id = ? AND category = ? "
            "ORDER BY id DESC LIMIT ?",
            (session_id, category, limit),
        ).fetchall()
        loaded = [
            (int(event_id), type_, data)
            for (event_id, type_, _raw), data in zip(
                reversed(rows), decode_all([r[2] for r in reversed(rows)]), strict=True
            )
            if isinstance(data, dict)
        ]
        if loaded:
            out[category] = loaded
    return out


def decode_all(raws: list[str]) -> list[Any]:
    """``json.loads`` of each text (None where one is not JSON), in one parse when all are
    objects (what ``sessions.record`` writes): one call instead of hundreds."""
    if all(r.startswith("{") and r.endswith("}") for r in raws):
        try:
            decoded = json.loads("[" + ",".join(raws) + "]")
            if isinstance(decoded, list) and len(decoded) == len(raws):
                return decoded
        except ValueError:
            pass
    out: list[Any] = []
    for raw in raws:
        try:
            out.append(json.loads(raw))
        except ValueError:
            out.append(None)
    return out


def _relative(path: str, root: str) -> str:
    prefix = root.rstrip("/") + "/"
    return path[len(prefix) :] if root and path.startswith(prefix) else path


def _generic(
    category: str, events: list[tuple[int, str, dict[str, Any]]], root: str = ""
) -> list[Item]:
    tier = CATEGORIES.get(category, 2)
    limit = SECTIONS[category][2]
    chars = _TEXT_CHARS.get(category, 160)
    items: list[Item] = []
    seen: set[str] = set()
    for event_id, type_, data in reversed(events):
        attrs: dict[str, Any] = {"type": type_} if category in _SHOW_TYPE else {}
        text = None
        for name in _TEXT_FIELDS:
            if name in data and text is None:
                text = _shorten(str(data[name]), chars)
        for name, value in data.items():
            if name in _HIDDEN_FIELDS or isinstance(value, dict | list):
                continue
            if text is None or not text.startswith(_shorten(str(value), chars)[:-1]):
                attrs[name] = _relative(str(value), root) if name == "path" else value
        signature = json.dumps([attrs, text], sort_keys=True, default=str)
        if signature in seen:
            continue
        seen.add(signature)
        items.append(Item(category, (tier, 0, event_id), False, attrs, text))
        if len(items) >= limit:
            break
    return items


#: Characters of each side of a file's latest change (``old → new``).
CHANGE_CHARS = 70


def _one_line(text: object) -> str:
    return " ⏎ ".join(part.strip() for part in str(text).splitlines() if part.strip())


def change_text(type_: str, data: dict[str, Any]) -> str | None:
    """A file event's change in a few words: ``ACCESS_TTL = 86400 → ACCESS_TTL = 7200``, the
    head of written content; None when the event holds no text."""
    old, new = _one_line(data.get("old") or ""), _one_line(data.get("new") or "")
    if not new and not old:
        return None
    if old and new:
        # An arrow, not "->": ">" is escaped in XML, and markup-looking text reads worse.
        return f"{_shorten(old, CHANGE_CHARS)} → {_shorten(new, CHANGE_CHARS)}"
    if old:
        return f"{_shorten(old, CHANGE_CHARS)} → (removed)"
    return _shorten(new, CHANGE_CHARS)


def _contexts(
    store: Database, session_id: str, events: list[tuple[int, str, dict[str, Any]]]
) -> list[Item]:
    """Knowledge stored while the session ran (MCP ``write_context``, ``ctxmode add``,
    templates, imports), as the store holds it now, with its id; a ``knowledge`` event whose
    context the store does not hold (another store, since deleted) is shown from the event.
    Decisions go under ``<decisions>``, other types under ``<knowledge>``."""
    limit = SECTIONS["knowledge"][2]
    row = store.conn.execute(
        "SELECT started_at FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    rows: list[Any] = []
    if row is not None:
        rows = store.conn.execute(
            "SELECT id, type, content, superseded_by, archived_at FROM contexts "
            "WHERE created_at >= ? ORDER BY id DESC LIMIT ?",
            (int(row[0]), 3 * limit),
        ).fetchall()
    known = {int(r[0]) for r in rows}
    live = [(int(r[0]), str(r[1]), str(r[2])) for r in rows if r[3] is None and r[4] is None][
        :limit
    ]
    items: list[Item] = []
    for context_id, type_, content in reversed(live):
        items.append(_context_item(context_id, type_, content, context_id))
    shown = {i.attrs["id"] for i in items}
    for event_id, type_, data in events:
        stored_id = data.get("id")
        if stored_id in known or stored_id in shown or not data.get("text"):
            continue
        shown.add(stored_id)
        items.append(_context_item(stored_id, type_, str(data["text"]), event_id))
    return items


def _context_item(context_id: Any, type_: str, content: str, order: int) -> Item:
    text = _shorten(" ".join(content.split()), 200)
    # What the model chose to store goes ahead of decisions read out of the conversation.
    prio = (-1, -order)  # stated ones: (0, -event id)
    if type_ == "decision":
        return Item("decision", (2, 1, order), False, {"id": context_id}, text, prio)
    return Item("knowledge", (2, 1, order), False, {"id": context_id, "type": type_}, text, prio)


# -- the current state, per category ---------------------------------------------------------


class Candidates(NamedTuple):
    """What the snapshot may show: its items, and attributes of their sections."""

    items: list[Item]
    section_attrs: dict[str, dict[str, Any]]


def _flat(text: str) -> str:
    return " ".join(text.split()).casefold()


def _requests(events: Events) -> tuple[list[Item], set[str]]:
    """Requests and corrections in force, and the clauses corrections reversed (flattened).

    The newest prompt is pinned; then the corrections, the session's first prompt (its goal)
    and the other newest ones, without their reversed clauses (a prompt left with none is
    gone)."""
    from ctxmode.sessions.corrections import reversed_clauses
    from ctxmode.sessions.prompts import clauses

    newest_of: dict[str, int] = {}
    for event_id, _type, data in events:
        text = str(data.get("text") or data.get("prompt") or "").strip()
        if text:
            newest_of.pop(text, None)  # a repeated prompt counts where it was last said
            newest_of[text] = event_id
    prompts = list(newest_of.items())
    fixes, gone = reversed_clauses([text for text, _id in prompts])
    reversed_texts: set[str] = set()
    items: list[Item] = []
    plain_shown = 0
    limit = SECTIONS["prompt"][2]
    for idx in range(len(prompts) - 1, -1, -1):  # newest first
        text, event_id = prompts[idx]
        dead = gone.get(idx)
        if dead:
            parts = [c for c, _mark in clauses(text)]
            reversed_texts.update(_flat(parts[k]) for k in dead if k < len(parts))
            alive = [p for k, p in enumerate(parts) if k not in dead]
            if not any(len(p) > 12 for p in alive):
                continue  # nothing of it stands but an opener ("Actually", "不对")
            text = "; ".join(alive)
        newest = idx == len(prompts) - 1
        if idx in fixes:
            chars, category, prio = REQUEST_CHARS, "correction", (0 if newest else 1, -event_id)
        elif newest or idx == 0 or plain_shown < limit:
            plain_shown += 1
            chars = REQUEST_CHARS if newest or idx == 0 else _TEXT_CHARS["prompt"]
            # An older question was most likely answered in its turn: it yields first.
            rank = 0 if newest else 2 if idx == 0 else 4 if _asks(text) else 3
            category, prio = "prompt", (rank, -event_id)
        else:
            continue
        # An older question goes with the rest (tier 3): it was most likely answered.
        tier = 3 if prio[0] == 4 else 1
        item = Item(category, (tier, 0, event_id), newest, {}, _shorten(text, chars), prio)
        items.append(item)
    return items, reversed_texts


def _asks(text: str) -> bool:
    """Does a prompt end with a question?"""
    return text.rstrip().endswith(("?", "？", "吗", "呢"))


def _tasks(events: Events) -> tuple[list[Item], int]:
    """Open tasks (in progress first, then blocked, then pending in the order they were
    made) and how many were completed; cancelled and deleted ones are gone."""
    latest: dict[str, tuple[int, int, dict[str, Any]]] = {}
    for event_id, _type, data in events:
        key = str(data.get("key", ""))
        first, _last, merged = latest.get(key, (event_id, 0, {}))
        latest[key] = (first, event_id, {**merged, **data})
    items, done = [], 0
    for first, _last, data in latest.values():
        status = str(data.get("status", "pending"))
        if status == "cancelled" or not data.get("subject"):
            continue  # gone, or an update of a task this session never named
        if status == "completed":
            done += 1  # counted; listed only when the budget has room to spare
        order = {"in_progress": 0, "blocked": 1, "completed": 3}.get(status, 2)
        weight = 1 if status == "in_progress" else 0
        items.append(
            Item(
                "task",
                (1, weight, first),
                status == "in_progress",
                {"status": status},
                str(data["subject"]),
                (order, -first if status == "completed" else first),
            )
        )
    return items, done


#: A pytest summary line the terminal cut: ``FAILED tests/x.py::test_y - sqlite3.Operati...``.
_CUT_SUMMARY = (" - ", ("...", "…"))


def error_text(message: str) -> str:
    """A failure's informative lines, one line each, without what says nothing: the run's
    summary (``1 failed, 13 passed``) goes when another line says what broke, and a summary
    line the terminal cut keeps only its test id."""
    from ctxmode.sessions.failures import is_summary

    lines = [ln.strip() for ln in message.splitlines() if ln.strip().strip("=-_* ")]
    if len(lines) > 1:
        lines = [ln for ln in lines if not is_summary(ln)] or lines
    out = []
    for line in lines:
        sep, tails = _CUT_SUMMARY
        if line.startswith(("FAILED ", "ERROR ")) and sep in line and line.endswith(tails):
            line = line.split(sep, 1)[0]
        place, colon, name = line.rpartition(": ")
        # pytest's location line ``tests/x.py:41: OperationalError`` when another line names
        # the exception already: the place is what it adds.
        if (
            colon
            and name.isidentifier()
            and place.rpartition(":")[2].isdigit()
            and any(name in other for other in lines if other != line)
        ):
            line = place
        out.append(line)
    return "\n".join(out)  # one space each in the XML


def _errors(events: Events, resolved: Events, root: str) -> list[Item]:
    """The latest failure of each target that nothing fixed since, newest first."""
    fixed: dict[tuple[str, str], int] = {}
    for event_id, _type, data in resolved:
        fixed[(str(data.get("tool", "")), str(data.get("target", "")))] = event_id
    latest: dict[tuple[str, str], tuple[int, str, dict[str, Any]]] = {}
    for event in events:
        key = (str(event[2].get("tool", "")), str(event[2].get("target", "")))
        if fixed.get(key, 0) < event[0]:
            latest[key] = event
    items = []
    chars = _TEXT_CHARS["error"]
    for event_id, type_, data in sorted(latest.values(), key=lambda e: -e[0])[
        : SECTIONS["error"][2]
    ]:
        text = error_text(str(data.get("message", ""))) or None
        target = _shorten(_relative(str(data.get("target", "")), root), 100)
        attrs = {"type": type_, "target": target}
        items.append(Item("error", (2, 0, event_id), False, attrs, text and _shorten(text, chars)))
    return items


#: A file shows its two latest changes when together they are no longer than this.
_BOTH_CHANGES_CHARS = 200
#: Event types that write a whole file: its content is in the repository, so the snapshot
#: shows no change for them (only edits say what was there before).
_WHOLE_FILE = frozenset({"write", "create"})
#: Event types that change a file in place: the default, not shown as ``op``.
_IN_PLACE = frozenset({"edit", "update"})


def _undoes(latest: str, earlier: str) -> bool:
    """Is ``b → a`` the reverse of ``a → b``?"""
    before, sep, after = latest.partition(" → ")
    return bool(sep) and earlier == f"{after} → {before}"


def _files(events: Events, root: str) -> list[Item]:
    """Edited files, newest first; each one's latest change is a detail (the two latest a
    longer one, shown when room is left).

    A file is its path, ``op`` when its latest change wrote it whole or deleted it (an
    in-place edit is the default) and, as the detail, its latest edit ``old → new`` (the two
    latest when short): what the file held before is what the repository no longer shows. A
    whole-file write has no detail (reading the file gives it) and ends the edits before it."""
    #: path -> (latest event id, ops, latest change, the one before it)
    by_path: dict[str, tuple[int, list[str], str | None, str | None]] = {}
    for event_id, type_, data in events:
        path = str(data.get("path", ""))
        if not path:
            continue
        _, ops, change, _before = by_path.get(path, (0, [], None, None))
        ops = [] if type_ in _IN_PLACE else [type_]  # the latest, unless an in-place edit
        if type_ in _WHOLE_FILE:
            by_path[path] = (event_id, ops, None, None)
            continue
        latest = change_text(type_, data)
        if latest is None or latest == change:
            by_path[path] = (event_id, ops, change, _before)
        else:
            by_path[path] = (event_id, ops, latest, change)
    newest = sorted(by_path.items(), key=lambda kv: kv[1][0], reverse=True)
    items = []
    for place, (path, (event_id, ops, change, before)) in enumerate(newest[: SECTIONS["file"][2]]):
        attrs = {"path": _relative(path, root), "op": ",".join(ops) or None}
        both = None
        # The two latest, when they are short and the latest does not just undo the other
        # (``a → b`` then ``b → a``: the latest alone says what the file held before).
        if change and before and not _undoes(change, before):
            both = f"{change}; {before}"
            both = both if len(both) <= _BOTH_CHANGES_CHARS else None
        items.append(Item("file", (1, 0, event_id), False, attrs, None, (place,), change, both))
    return items


def _git(events: Events) -> list[Item]:
    """The last commit, the branch last switched to, then other actions, newest first."""
    items: list[Item] = []
    seen: set[str] = set()
    commit = branch = False
    for event_id, type_, data in reversed(events):
        if len(items) >= SECTIONS["git"][2]:
            break
        if type_ == "commit" and not commit:
            commit, prio = True, 0
        elif type_ in ("checkout", "switch", "branch") and data.get("branch") and not branch:
            branch, prio = True, 1
        else:
            prio = 2
        text = data.get("message") or data.get("command")
        attrs = {k: v for k, v in data.items() if k not in ("message", "command")}
        signature = json.dumps([attrs, text], sort_keys=True)
        if signature in seen:
            continue
        seen.add(signature)
        text = _shorten(str(text), 160) if text else None
        items.append(Item("git", (2, 0, event_id), False, attrs, text, (prio, -event_id)))
    # A switch to the branch the last commit (made after it) names says nothing more.
    last = next((i for i in items if i.prio[0] == 0), None)
    if last is not None and last.attrs.get("branch"):
        items = [
            i
            for i in items
            if not (
                i.prio[0] == 1
                and i.attrs.get("branch") == last.attrs["branch"]
                and i.rank[2] < last.rank[2]
            )
        ]
    return items


#: Statements a prompt's clauses make: gone when a correction reversed the clause.
_STATED = frozenset({"constraint", "rejected_approach", "decision", "role"})


def _reversed(data: dict[str, Any], reversed_texts: set[str]) -> bool:
    text = _flat(str(data.get("text", "")))
    return bool(text) and any(text in r or r in text for r in reversed_texts)


def candidates(store: Database, session_id: str) -> Candidates:
    """Every item the snapshot of a session may show, and its section attributes."""
    loaded = _load(store, session_id)
    root = store.root_dir
    items, reversed_texts = _requests(loaded.get("prompt", []))
    section_attrs: dict[str, dict[str, Any]] = {}
    for category in SECTIONS:
        events = loaded.get(category, [])
        if category == "knowledge":
            items += _contexts(store, session_id, events)
        elif not events or category == "prompt":
            continue
        elif category == "file":
            items += _files(events, root)
        elif category == "task":
            tasks, done = _tasks(events)
            items += tasks
            if done:
                section_attrs["tasks"] = {"done": done}
        elif category == "error":
            items += _errors(events, loaded.get("error_resolution", []), root)
        elif category == "git":
            items += _git(events)
        elif category == "error_resolution":
            # What was fixed, in a line: the failure's own lines, without what says nothing.
            clean = [
                (i, t, {**d, "message": error_text(str(d.get("message", "")))})
                for i, t, d in events
            ]
            items += _generic(category, clean, root)
        else:
            if category in _STATED and reversed_texts:
                events = [e for e in events if not _reversed(e[2], reversed_texts)]
            items += _generic(category, events, root)
    # A file read and edited is listed once, under <files>.
    edited = {i.attrs.get("path") for i in items if i.category == "file"}
    items = [i for i in items if i.category != "data" or i.attrs.get("path") not in edited]
    # A statement the user made inside a correction is shown by the correction itself.
    said = [_flat(i.text or "") for i in items if i.category == "correction"]
    items = [
        i
        for i in items
        if i.category not in _STATED or not i.text or not any(_flat(i.text) in c for c in said)
    ]
    return Candidates(_drop_repeated_texts(items), section_attrs)


def _drop_repeated_texts(items: list[Item]) -> list[Item]:
    """One prompt can be a constraint, a rejection and a decision at once: keep it once.

    The first section (in ``SECTIONS`` order) that holds a P2+ text keeps it; requests are
    not deduplicated because the newest ones may be trimmed or kept independently.
    """
    seen: set[str] = set()
    out = []
    for item in items:
        if CATEGORIES.get(item.category, 1) >= 2 and item.text:
            if item.text in seen:
                continue
            seen.add(item.text)
        out.append(item)
    return out
