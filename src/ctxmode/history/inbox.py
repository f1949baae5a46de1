"""Knowledge candidates proposed from imported sessions: ``ctxmode inbox``.

What a past session said that looks like lasting knowledge becomes a candidate, with its
evidence (the session, its agent and date, the exact words): a decision ("we'll use X",
"选用 X"), a constraint ("never ...", "from now on ...", "禁止 ..."), a rejected approach
("don't use X", "instead of X", "不要用 X"), a convention ("by convention ...", "约定 ..."),
a failure and the change after which the same command passed. A candidate is never promoted
on its own: ``accept`` stores it as a context (linked to the files its sessions edited),
``reject`` drops it for good.

Precision over recall. A clause is read only when it states, not when it asks or supposes
(questions, "if ...", "maybe ...", "should we ...", "要不要 ..." are never candidates), and
only through phrases that commit ("we'll use", not "use"; "never", not "don't forget").

Rank: each session whose user stated it counts 2, one where only the agent recorded it
(ctxmode's ``write_context``) 1.5, a fix seen in the events 1; repeated across sessions the
sum grows; a statement that a later session contradicts (a decision on X, then "don't use X",
or the reverse) is kept at a third of its score and marked ``contradicted``.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxmode.core.db import Database
from ctxmode.core.errors import InvalidInput, NotFound
from ctxmode.sessions.prompts import clauses

#: Candidate kind -> the context type it is stored as.
KIND_TYPES = {
    "decision": "decision",
    "constraint": "constraint",
    "rejection": "constraint",
    "convention": "convention",
    "fix": "issue",
}
#: Evidence weight by who said it.
_WEIGHT = {"user": 2.0, "agent": 1.5, "events": 1.0}
#: Longest quote kept as evidence (characters).
QUOTE_CHARS = 300

_WORD = r"[\w.+#/\-]+"
_SUBJECT = rf"(?P<subj>{_WORD}(?:\s+{_WORD}){{0,3}})"
_DECISION = (
    re.compile(
        r"\b(?:we'll|we will|we're going to|we are going to|let's|lets|we should always|"
        r"we|i've|we've)\s+(?:use|go with|switch to|adopt|stick with|standardi[sz]e on|"
        r"decided (?:to use|on|to go with)|chose|picked|settled on|opted for)\s+" + _SUBJECT,
        re.I,
    ),
    re.compile(r"\b(?:decided|decision is) (?:to use|to go with|on)\s+" + _SUBJECT, re.I),
    re.compile(r"^(?:going with|go with)\s+" + _SUBJECT, re.I),
)
_DECISION_ZH = re.compile(
    r"(?:选用|决定用|决定使用|决定采用|就用|改用|采用|统一用|以后都用)\s*(?P<subj>[\w.+#\-]+)"
)
_REJECTION = (
    re.compile(
        r"\b(?:don't|do not|never|stop|no longer|avoid|we won't|we will not)\s+"
        r"(?:use|using|add|adding|depend on|rely on)\s+" + _SUBJECT,
        re.I,
    ),
    re.compile(r"\b(?:instead of|rather than)\s+" + _SUBJECT, re.I),
    re.compile(r"^not\s+" + _SUBJECT + r"$", re.I),
)
_REJECTION_ZH = re.compile(
    r"(?:不要用|别用|不再用|不用|弃用|不要使用|禁止使用)\s*(?P<subj>[\w.+#\-]+)"
)
_CONSTRAINT = re.compile(
    r"^(?:never|always)\b|\b(?:must never|must always|must not|mustn't|should never|"
    r"from now on|going forward|at all times|under no circumstances|is not allowed|"
    r"are not allowed)\b",
    re.I,
)
_CONSTRAINT_ZH = re.compile(r"永远不要|永远别|禁止|务必|一律|绝不|不得|不允许|以后都")
_CONVENTION = re.compile(
    r"\b(?:by convention|our convention|the convention is|naming convention|we always name|"
    r"prefer \w+ over|we always use)\b",
    re.I,
)
_CONVENTION_ZH = re.compile(r"约定|命名规范|统一使用|代码风格")
#: A clause that supposes, wonders or asks: never a candidate.
_HYPOTHETICAL = re.compile(
    r"^(?:if|what if|maybe|perhaps|suppose|supposing|would|could|might|should we|shall we|"
    r"do we|did we|can we|is it|are we|whether|in case|let me know|not sure|i wonder|"
    r"i'm not sure|i am not sure)\b|\b(?:or not|what do you think|do you think|"
    r"would it|could we|should we|might be|wondering)\b",
    re.I,
)
_HYPOTHETICAL_ZH = re.compile(
    r"^(?:如果|假如|要是|万一)|要不要|是否|会不会|能不能|可不可以|吗$|呢$"
)
#: Words that end a subject ("Redis for the cache": the subject is Redis).
_SUBJECT_STOPS = frozenset(
    {
        "for", "in", "to", "with", "because", "since", "as", "on", "and", "but", "so", "that",
        "which", "when", "if", "instead", "rather", "than", "from", "at", "by", "of", "here",
        "there", "now",
    }
)  # fmt: skip
_ARTICLES = frozenset({"the", "our"})
#: First words of what is used once, not chosen: "let's use a script", "we use it to ...".
_ONE_OFF = frozenset(
    {"a", "an", "it", "this", "that", "them", "these", "those", "something", "some", "one",
     "what", "which", "whatever", "any", "anything", "same"}
)  # fmt: skip


@dataclass(frozen=True)
class Candidate:
    """A proposed piece of knowledge and its evidence."""

    id: int
    kind: str
    #: What it is about: the thing decided or rejected, else the statement normalised.
    subject: str
    text: str
    score: float
    status: str
    evidence: list[dict[str, Any]]
    context_id: int | None
    created_at: int

    @property
    def context_type(self) -> str:
        """The type of the context that accepting the candidate stores by default."""
        return KIND_TYPES.get(self.kind, "decision")

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "subject": self.subject,
            "type": self.context_type,
            "text": self.text,
            "score": round(self.score, 2),
            "status": self.status,
            "evidence": self.evidence,
            "context_id": self.context_id,
            "created_at": self.created_at,
        }


@dataclass(frozen=True)
class Statement:
    """One clause that states knowledge."""

    kind: str
    subject: str
    quote: str


# -- reading statements ----------------------------------------------------------------------


def subject_of(text: str) -> str:
    """The thing a statement is about, lower-cased: "Redis for the session cache" -> redis."""
    words = [w.strip(".,;:!?'\"`()") for w in text.split()]
    while words and words[0].lower() in _ARTICLES:
        words = words[1:]
    out: list[str] = []
    for word in words:
        if not word or word.lower() in _SUBJECT_STOPS:
            break
        out.append(word.lower())
    return " ".join(out[:3])


def _hypothetical(clause: str, mark: str) -> bool:
    low = clause.strip().lower()
    return (
        (mark != "" and mark in "?？")
        or bool(_HYPOTHETICAL.search(low))
        or bool(_HYPOTHETICAL_ZH.search(clause.strip()))
    )


#: Sentence ends: a candidate quotes the user's whole sentence, not the clause that cued it.
_SENTENCE = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])|\n+")


def statements(text: str) -> list[Statement]:
    """The knowledge ``text`` states: each clause that states (not one that asks or
    supposes), quoted as the whole sentence it is in."""
    out: list[Statement] = []
    for sentence in _SENTENCE.split(text):
        quote = " ".join(sentence.split())
        if len(quote) < 6 or quote.endswith(("?", "？")):
            continue  # a sentence that ends asking asks all through ("X, right?")
        found: list[Statement] = []
        previous_decision = False
        for clause, mark in clauses(quote):
            body = " ".join(clause.split())
            if len(body) < 3 or _hypothetical(body, mark):
                previous_decision = False
                continue
            said = _classify(body, previous_decision, quote)
            previous_decision = any(s.kind == "decision" for s in said)
            found += [
                s for s in said if (s.kind, s.subject) not in {(f.kind, f.subject) for f in found}
            ]
        out += found
    return out


def _classify(body: str, after_decision: bool, quote: str) -> list[Statement]:
    out: list[Statement] = []
    for pattern in (*_REJECTION, _REJECTION_ZH):
        m = pattern.search(body)
        if m and (not pattern.pattern.startswith("^not") or after_decision):
            subject = subject_of(m.group("subj"))
            if subject and subject.split()[0] not in _ONE_OFF:
                out.append(Statement("rejection", subject, quote))
                break
    for pattern in (*_DECISION, _DECISION_ZH):
        m = pattern.search(body)
        if m and m.group("subj").split()[0].lower() not in _ONE_OFF:
            subject = subject_of(m.group("subj"))
            rejected = {s.subject for s in out}
            if subject and subject not in rejected and not _negated(body, m.start()):
                out.append(Statement("decision", subject, quote))
                break
    if not out and (_CONSTRAINT.search(body) or _CONSTRAINT_ZH.search(body)):
        out.append(Statement("constraint", _norm(quote), quote))
    if not out and (_CONVENTION.search(body) or _CONVENTION_ZH.search(body)):
        out.append(Statement("convention", _norm(quote), quote))
    return out


def _negated(body: str, at: int) -> bool:
    before = body[:at].lower().split()[-2:]
    return any(w in ("not", "don't", "never", "won't", "no") for w in before)


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s]", " ", text.lower()).split())


# -- proposing -------------------------------------------------------------------------------


def propose(store: Database, now: int | None = None) -> int:
    """Scan the imported sessions and upsert their candidates; the number of open ones.

    Idempotent: evidence is keyed by session and quote, a candidate by its kind and subject;
    accepted and rejected candidates keep their status."""
    ts = int(now if now is not None else time.time())
    rows = store.conn.execute(
        "SELECT e.id, e.session_id, e.agent, e.category, e.type, e.data, e.created_at "
        "FROM events e JOIN (SELECT DISTINCT session_id FROM history_files "
        "WHERE session_id IS NOT NULL) h ON h.session_id = e.session_id "
        "WHERE e.category IN ('prompt', 'knowledge', 'error', 'data', 'file') "
        "ORDER BY e.created_at, e.id"
    ).fetchall()
    found: dict[str, dict[str, Any]] = {}
    by_session: dict[str, list[tuple[Any, ...]]] = {}
    for row in rows:
        by_session.setdefault(row[1], []).append(row)
        _, sid, agent, category, type_, data_json, at = row
        data = _json(data_json)
        if category == "prompt":
            who, text = "user", str(data.get("text") or "")
        elif category == "knowledge":
            who, text = "agent", str(data.get("text") or "")
        else:
            continue
        said = statements(text)
        if category == "knowledge" and type_ in KIND_TYPES and text.strip():
            # What the agent stored through ctxmode: the statement whole, as its type.
            said = [Statement(type_, _norm(text), text)] + [
                s for s in said if s.kind == "rejection"
            ]
        for st in said:
            _add(found, st, {"session": sid, "agent": agent, "at": at, "by": who,
                             "quote": st.quote[:QUOTE_CHARS]})  # fmt: skip
    for sid, session_rows in by_session.items():
        for st, evidence in _fixes(sid, session_rows):
            _add(found, st, evidence)
    _contradictions(found)
    with store.transaction() as conn:
        for key, item in found.items():
            _upsert(conn, key, item, ts)
    return open_count(store)


def open_count(store: Database) -> int:
    """How many candidates wait in the inbox."""
    row = store.conn.execute("SELECT count(*) FROM candidates WHERE status = 'open'").fetchone()
    return int(row[0])


def _json(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _add(found: dict[str, dict[str, Any]], st: Statement, evidence: dict[str, Any]) -> None:
    key = f"{st.kind}:{st.subject}"
    item = found.setdefault(key, {"kind": st.kind, "subject": st.subject, "evidence": []})
    item.setdefault("text", st.quote)
    seen = {(e["session"], e["quote"]) for e in item["evidence"]}
    if (evidence["session"], evidence["quote"]) not in seen:
        item["evidence"].append(evidence)
    if evidence["by"] == "user" and item.get("by") != "user":
        item["text"], item["by"] = st.quote, "user"  # the user's own words over the agent's


def _contradictions(found: dict[str, dict[str, Any]]) -> None:
    """A later opposite statement on the same subject contradicts an earlier one."""
    for item in found.values():
        opposite = {"decision": "rejection", "rejection": "decision"}.get(item["kind"])
        other = found.get(f"{opposite}:{item['subject']}") if opposite else None
        if other is None:
            continue
        last_mine = max(e["at"] for e in item["evidence"])
        if max(e["at"] for e in other["evidence"]) > last_mine:
            item["contradicted"] = True


def _score(item: dict[str, Any]) -> float:
    best: dict[str, float] = {}
    for e in item["evidence"]:
        best[e["session"]] = max(best.get(e["session"], 0.0), _WEIGHT.get(e["by"], 1.0))
    score = sum(best.values())
    return score / 3 if item.get("contradicted") else score


def _upsert(conn: Any, key: str, item: dict[str, Any], ts: int) -> None:
    evidence = sorted(item["evidence"], key=lambda e: e["at"])
    for e in evidence:
        e["contradicted"] = bool(item.get("contradicted"))
    text = str(item["text"])[:QUOTE_CHARS]
    conn.execute(
        "INSERT INTO candidates(kind, text, key, evidence, score, created_at, updated_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET "
        "text = excluded.text, evidence = excluded.evidence, score = excluded.score, "
        "updated_at = excluded.updated_at WHERE candidates.status = 'open'",
        (item["kind"], text, key, json.dumps(evidence, ensure_ascii=False), _score(item), ts, ts),
    )


def _fixes(session_id: str, rows: list[tuple[Any, ...]]) -> list[tuple[Statement, dict[str, Any]]]:
    """A command that failed, then files edited, then the same command passing."""
    out: list[tuple[Statement, dict[str, Any]]] = []
    failed: dict[str, tuple[dict[str, Any], list[str], int]] = {}
    for _, _, agent, category, type_, data_json, at in rows:
        data = _json(data_json)
        if category == "error" and data.get("tool") == "Bash" and data.get("target"):
            failed[str(data["target"])] = (data | {"kind": type_}, [], at)
        elif category == "file" and data.get("path"):
            for _, edits, _ in failed.values():
                if data["path"] not in edits:
                    edits.append(str(data["path"]))
        elif category == "data" and type_ == "command" and data.get("command") in failed:
            error, edits, _ = failed.pop(str(data["command"]))
            if not edits:
                continue  # passed again without a change: flaky, not fixed
            message = str(error.get("message") or "").splitlines()[:1]
            names = ", ".join(Path(p).name for p in edits[:3])
            command = str(data["command"])
            command = command if len(command) <= 120 else command[:119] + "…"
            text = (
                f"`{command}` failed ({error['kind']}"
                + (f": {message[0]}" if message else "")
                + f"); it passed after changes to {names}"
            )
            st = Statement("fix", _norm(str(data["command"]) + " " + error["kind"]), text)
            out.append((st, {"session": session_id, "agent": agent, "at": at, "by": "events",
                             "quote": text[:QUOTE_CHARS], "files": edits[:10]}))  # fmt: skip
    return out


# -- the inbox -------------------------------------------------------------------------------


def _row(row: tuple[Any, ...]) -> Candidate:
    evidence = json.loads(row[5])
    subject = str(row[8]).split(":", 1)[-1]
    return Candidate(
        row[0], row[1], subject, row[2], float(row[3]), row[4], evidence, row[6], row[7]
    )


_COLUMNS = "id, kind, text, score, status, evidence, context_id, created_at, key"


def list_candidates(
    store: Database, *, include_closed: bool = False, limit: int = 50
) -> list[Candidate]:
    """Candidates, best evidence first (open ones only unless ``include_closed``)."""
    where = "" if include_closed else "WHERE status = 'open'"
    rows = store.conn.execute(
        f"SELECT {_COLUMNS} FROM candidates {where} ORDER BY score DESC, id LIMIT ?",
        (max(0, limit),),
    ).fetchall()
    return [_row(r) for r in rows]


def get(store: Database, candidate_id: int) -> Candidate:
    row = store.conn.execute(
        f"SELECT {_COLUMNS} FROM candidates WHERE id = ?", (candidate_id,)
    ).fetchone()
    if row is None:
        raise NotFound(f"no candidate #{candidate_id}; `ctxmode inbox` lists them")
    return _row(row)


def touched_files(store: Database, candidate: Candidate) -> list[str]:
    """The project files the candidate's sessions edited (that still exist), for linking."""
    sessions = sorted({str(e["session"]) for e in candidate.evidence})
    paths: list[str] = []
    for e in candidate.evidence:
        paths += [p for p in e.get("files", []) if isinstance(p, str)]
    if not paths:
        marks = ",".join("?" * len(sessions))
        rows = store.conn.execute(
            f"SELECT DISTINCT json_extract(data, '$.path') FROM events WHERE category = 'file' "
            f"AND session_id IN ({marks})",
            sessions,
        ).fetchall()
        paths = [str(r[0]) for r in rows if r[0]]
    root = Path(store.root_dir).resolve()
    out: list[str] = []
    for p in paths:
        full = Path(p) if Path(p).is_absolute() else root / p
        try:
            rel = full.resolve().relative_to(root).as_posix()
        except (ValueError, OSError):
            continue
        if full.is_file() and rel not in out:
            out.append(rel)
    return out[:10]


def accept(
    store: Database,
    candidate_id: int,
    *,
    type_: str | None = None,
    files: list[str] | None = None,
) -> dict[str, Any]:
    """Store the candidate as a context (its type, or ``type_``), linked to ``files`` or to
    the files its sessions edited; the candidate is then accepted."""
    from ctxmode.knowledge import contexts

    candidate = get(store, candidate_id)
    if candidate.status != "open":
        raise InvalidInput(f"candidate #{candidate_id} is already {candidate.status}")
    kind = type_ or candidate.context_type
    linked = files if files is not None else touched_files(store, candidate)
    first = candidate.evidence[0] if candidate.evidence else {}
    meta = {
        "source": "inbox",
        "candidate": candidate.id,
        "evidence": [
            {k: e.get(k) for k in ("session", "agent", "at", "by", "quote")}
            for e in candidate.evidence[:5]
        ],
    }
    with store.transaction() as conn:
        result = contexts.write_context(
            store, kind, candidate.text, file_paths=linked, metadata=meta,
            session_id=str(first.get("session") or "") or None,
        )  # fmt: skip
        conn.execute(
            "UPDATE candidates SET status = 'accepted', context_id = ?, updated_at = ? "
            "WHERE id = ?",
            (result.id, int(time.time()), candidate.id),
        )
    return {"id": candidate.id, "context_id": result.id, "type": kind, "files": linked}


def reject(store: Database, candidate_id: int) -> None:
    """Drop the candidate: it stays rejected, and is not proposed again."""
    candidate = get(store, candidate_id)
    if candidate.status == "accepted":
        raise InvalidInput(
            f"candidate #{candidate_id} was accepted as context #{candidate.context_id}; "
            "remove that with `ctxmode rm`"
        )
    with store.transaction() as conn:
        conn.execute(
            "UPDATE candidates SET status = 'rejected', updated_at = ? WHERE id = ?",
            (int(time.time()), candidate_id),
        )
