"""Text heuristics for prompts (English and Chinese): the request, and what a cue really states.

A prompt is recorded as the request; a cue (``instead of``, ``rather than``, 不要...) may add
only the clause it governs, as the user's words, never the whole prompt again under another
heading. Intent cues are verbs, questions are not decisions. Hook path: standard library only.
"""

from __future__ import annotations

from ctxmode.core._lean import LazyRegex
from ctxmode.core.redact import redact
from ctxmode.sessions.vocab import DECISION_MIN_CHARS, PROMPT_CHARS, EventRecord, _rec, clip

#: Prompt heuristics as cue lists, not regexes: compiling a dozen patterns cost each prompt
#: hook ~5 ms. (English words and phrases, matched as whole words, case-insensitive; Chinese
#: cues, matched as substrings.) Precision over recall: a cue is a phrase that states the
#: category (``we decided``, ``instead of``), not a word that merely can (``choose``, ``drop``).
_PROMPT_CUES: dict[str, tuple[str, str]] = {
    "role": (
        "you are a|you are an|you're a|you're an|act as|acting as|pretend to be|as a senior|"
        "as an expert|as an experienced|as a expert|as a experienced|as an senior",
        "你是一名|你是一个|你是一位|作为一名|作为一个|作为一位|扮演",
    ),
    "constraint": (
        "must|mustn't|must not|never|always|do not|don't|only use|without using|no more than|"
        "at most|at least|make sure|keep the|leave the",
        "必须|不要|不能|禁止|只能|务必|一定要|不允许|别动|别改|别碰|切勿|不得",
    ),
    "decision": (
        "we decided|i decided|decided to|decided on|let's go with|lets go with|we'll go with|"
        "we will go with|we'll use|we will use|we chose|i chose|opted for|settled on",
        "决定|就用|选定",
    ),
    "rejected_approach": (
        "instead of|rather than|don't use|do not use|stop using|no longer use",
        "不要用|别用|不用|而不是|放弃|不再用",
    ),
    "blocker": (
        "blocked by|blocked on|i'm blocked|we're blocked|i am blocked|i'm stuck|we're stuck|"
        "i am stuck|stuck on|can't proceed|cannot proceed",
        "卡住|阻塞|被卡",
    ),
}


#: Rejections first: "don't use X" is a rejection, not also a constraint.
_CUE_ORDER = ("role", "rejected_approach", "decision", "constraint", "blocker")


#: Intent cues are verbs: "fix the crash" is a fix, "the error message" is not (nouns such as
#: error, test or document say what the request is about, not what to do with it).
_INTENT_CUES: tuple[tuple[str, tuple[str, str]], ...] = (
    (
        "fix",
        (
            "fix|fixes|fixing|debug|repair|broken|crashes|crashing|is failing|are failing",
            "修复|修一下|修好|报错|崩溃|出错",
        ),
    ),
    ("refactor", ("refactor|clean up|rename|simplify|restructure", "重构|整理")),
    (
        "test",
        (
            "write tests|add tests|add a test|write a test|run the tests|test coverage",
            "写测试|加测试|补测试",
        ),
    ),
    ("review", ("review|audit", "审查|评审")),
    ("docs", ("document|update the docs|update the readme", "写文档|更新文档")),
    ("implement", ("add|implement|create|build|write|support", "实现|添加|新增|编写")),
    ("investigate", ("why|explain|investigate|look into|find out", "为什么|解释|调查")),
)


#: Clause ends: a clause is what a cue may quote (never the whole prompt again).
_CLAUSE_ENDS = frozenset(";；。！？!?\n，：")


_SENTENCE_ENDS = frozenset(".:,")  # English: only before a space or the end


#: A clause starting with these goes with the next one ("if it fails, don't retry").
_CONDITIONS = (
    "if ",
    "when ",
    "unless ",
    "once ",
    "after ",
    "before ",
    "如果",
    "要是",
    "当",
    "除非",
)


_QUESTION_STARTS = (
    "what ",
    "which ",
    "why ",
    "how ",
    "who ",
    "where ",
    "when ",
    "should ",
    "do ",
    "does ",
    "did ",
    "can ",
    "could ",
    "is ",
    "are ",
    "was ",
    "were ",
    "have ",
    "has ",
)


#: Everything but letters, digits, ``_`` and ``'`` separates words (as ``\b`` would).
_WORD_BREAKS = str.maketrans(
    dict.fromkeys('!"#$%&()*+,-./:;<=>?@[\\]^`{|}~\t\n\r，。！？；：、（）【】《》“”…—', " ")
)


class _Words:
    """A text's lower-case words, for whole-word and phrase cues."""

    __slots__ = ("padded", "text", "words")

    def __init__(self, text: str) -> None:
        lowered = text.lower().replace("\u2019", "'").translate(_WORD_BREAKS)
        tokens = [t.strip("'") for t in lowered.split()]
        self.text = text
        self.words = frozenset(tokens)
        self.padded = f" {' '.join(tokens)} "

    def has_cue(self, cues: tuple[str, str]) -> bool:
        english, chinese = cues
        for cue in english.split("|"):
            if (f" {cue} " in self.padded) if " " in cue else (cue in self.words):
                return True
        return any(cue in self.text for cue in chinese.split("|"))


_URL = LazyRegex(r"https?://[^\s<>\"'`)\]]+")


_ISSUE_REF = LazyRegex(r"(?<![\w&/])#(\d{1,7})\b")


def external_refs(text: str) -> list[EventRecord]:
    """URLs and ``#123`` references mentioned in ``text`` (at most five)."""
    out = []
    if "://" in text:
        out += [
            _rec("external_ref", "url", url=clip(u.rstrip(".,;:"), 200)) for u in _URL.findall(text)
        ]
    if "#" in text:
        out += [_rec("external_ref", "issue", ref=f"#{n}") for n in _ISSUE_REF.findall(text)]
    return out[:5]


def is_decision_text(text: str) -> bool:
    """Does an assistant message announce a decision (keywords plus a length threshold)?"""
    return len(text.strip()) >= DECISION_MIN_CHARS and _Words(text).has_cue(
        _PROMPT_CUES["decision"]
    )


def clauses(text: str) -> list[tuple[str, str]]:
    """(clause, the mark that ends it) of a prompt: split at ``; ! ? newline`` and Chinese
    punctuation, at ``. : ,`` before a space; a conditional clause joins the next one."""
    out: list[tuple[str, str]] = []
    start, n = 0, len(text)
    for i, ch in enumerate(text):
        end = ch in _CLAUSE_ENDS or (ch in _SENTENCE_ENDS and (i + 1 == n or text[i + 1].isspace()))
        if end:
            out.append((text[start:i], ch))
            start = i + 1
    out.append((text[start:], ""))
    merged: list[tuple[str, str]] = []
    pending = ""
    for clause, mark in out:
        body = clause.strip()
        if not body:
            continue
        if pending:
            body = f"{pending}{'，' if pending[-1:] > chr(0x2E80) else ', '}{body}"
            pending = ""
        if mark in ",，" and body.lower().startswith(_CONDITIONS):
            pending = body
            continue
        merged.append((body, mark))
    if pending:
        merged.append((pending, ""))
    return merged


def _is_question(clause: str, mark: str) -> bool:
    low = clause.lower()
    return mark in ("?", "？") or low.startswith(_QUESTION_STARTS) or clause.endswith(("吗", "呢"))


#: Someone else's words: "the checklist says X" reports a rule, the user does not state it
#: ("I said" and 我说 are the user's own).
_REPORTED = (
    " says ",
    " said ",
    " say ",
    "according to",
    " states that ",
    " requires that ",
    "上说",
    "里说",
    "中说",
    "写着",
    "规定",
    "提到",
    "要求",
)
_OWN_WORDS = (" i said ", " we said ", " i say ", "我说", "我们说")
#: A conditional clause in this mood imagines a case ("if we ever ..., we would ...").
_HYPOTHETICAL = (
    " would ",
    " could ",
    " might ",
    "'d ",
    " ever ",
    " someday ",
    " one day ",
    "以后",
    "将来",
    "万一",
    "可能",
    "假如",
    "假设",
)


def is_reported_or_hypothetical(clause: str) -> bool:
    """A rule quoted from elsewhere, or a case imagined: not the user's constraint or decision."""
    low = f" {clause.lower()} "
    if any(cue in low for cue in _REPORTED) and not any(cue in low for cue in _OWN_WORDS):
        return True
    return low.lstrip().startswith(_CONDITIONS) and any(cue in low for cue in _HYPOTHETICAL)


def _cue_at(clause: str, cues: tuple[str, str]) -> int:
    """Where the first cue of ``cues`` starts in ``clause`` (-1: none)."""
    english, chinese = cues
    low = clause.lower().replace("\u2019", "'")
    best = -1
    for cue in english.split("|"):
        at = low.find(cue)
        while at != -1:
            before = low[at - 1] if at else " "
            after = low[at + len(cue)] if at + len(cue) < len(low) else " "
            if not (before.isalnum() or before == "_") and not (after.isalnum() or after == "_"):
                break
            at = low.find(cue, at + 1)
        if at != -1 and (best == -1 or at < best):
            best = at
    for cue in chinese.split("|"):
        at = clause.find(cue)
        if at != -1 and (best == -1 or at < best):
            best = at
    return best


def prompt_records(prompt: str) -> list[EventRecord]:
    """The prompt (the request) plus what its clauses state: a role, a constraint, a decision,
    a rejected approach (the phrase from "instead of", "rather than", "不要用" on), a blocker;
    the intent as a type. A cue quotes its clause, never the whole prompt again."""
    # Redacted before it is cut into clauses: a clause could hold a secret without its name.
    text = redact(prompt.strip())
    if not text:
        return []
    out = [_rec("prompt", "request", text=clip(text, PROMPT_CHARS))]
    whole = " ".join(text.split())
    seen: set[str] = set()
    for clause, mark in clauses(text):
        # "Should we ... or must it stay?", "if we ever ..., would ...?", "the checklist says
        # X must ...": a question, a hypothetical or a quoted rule states nothing of the user's.
        asks = _is_question(clause, mark) or is_reported_or_hypothetical(clause)
        words = _Words(clause)
        whole_rejection = False
        for category in _CUE_ORDER:
            cues = _PROMPT_CUES[category]
            if (asks and category != "blocker") or (category == "constraint" and whole_rejection):
                continue  # "what was decided about auth?" asks, it does not decide
            if not words.has_cue(cues):
                continue
            quoted = clause
            if category == "rejected_approach":
                at = _cue_at(clause, cues)
                quoted = clause[at:] if at > 0 else clause
            whole_rejection = category == "rejected_approach" and quoted == clause
            quoted = " ".join(quoted.split())
            if quoted == whole or quoted in seen:
                continue  # the request already says it
            seen.add(quoted)
            out.append(
                _rec(
                    category,
                    "stated" if category in ("role", "constraint") else "user",
                    text=clip(quoted, 160),
                )
            )
    words = _Words(text)
    for name, cues in _INTENT_CUES:
        if words.has_cue(cues):
            out.append(_rec("intent", name))
            break
    out += external_refs(text)
    return out
