"""The user's corrections: which prompts reverse earlier instructions, and which clauses.

A correction is a prompt that opens like one ("Actually, ...", "No, ...", "不对，...", "算了")
or says it goes back ("change it back", "改回"). Each of its clauses reverses the earlier
prompt clauses it is about: those sharing most of their words (English words, numbers and
paths; Chinese as character pairs) with it, measured against the shorter of the two. Only a
correction reverses anything: two ordinary prompts on the same subject are both requests.

Pure functions over prompt texts, for the snapshot (read side): standard library only.
"""

from __future__ import annotations

from ctxmode.sessions.prompts import clauses

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time (see _lean)
if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["is_correction", "reversed_clauses", "terms"]

#: How a correction opens (lower-cased, after leading spaces).
_OPENERS = (
    "actually",
    "no,",
    "no.",
    "no ",
    "nope",
    "wait,",
    "wait ",
    "scratch that",
    "on second thought",
    "change of plan",
    "correction:",
    "i changed my mind",
    "sorry, i meant",
    "不对",
    "不是",
    "算了",
    "其实",
    "更正",
    "等等",
    "错了",
    "不，",
    "不,",
)
#: Phrases that reverse wherever they stand.
_ANYWHERE = (
    "change it back",
    "changed my mind",
    "go back to",
    "revert to",
    "switch back",
    "改回",
    "换回",
    "改成原来",
)
#: Words that say nothing about what a clause is about.
_STOP_WORDS = (
    "the a an and or but to of in on at for from with by as is are be it its this that these "
    "those we you i our your my me us them they do does don't dont doesn't not no never "
    "please also just then now so if when once use using keep make let's lets should would "
    "can could will shall must any all some more less than instead actually wait"
)
_STOP = frozenset(_STOP_WORDS.split())
#: Share of the shorter clause's terms the two must share, and the fewest shared terms.
OVERLAP = 0.5
MIN_SHARED = 2


def is_correction(text: str) -> bool:
    """Does a prompt correct an earlier instruction (by how it opens or what it says)?"""
    low = text.strip().lower().replace("\u2019", "'")
    return low.startswith(_OPENERS) or any(cue in low for cue in _ANYWHERE)


def _is_cjk(ch: str) -> bool:
    return "\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf"


def terms(text: str) -> frozenset[str]:
    """What a clause is about: its content words (paths and numbers kept whole) and the
    character pairs of its Chinese runs."""
    out: set[str] = set()
    word: list[str] = []
    run: list[str] = []

    def flush_word() -> None:
        token = "".join(word).strip("._-/'").lower()
        if token and token not in _STOP and (len(token) > 2 or token.isdigit()):
            out.add(token)
        word.clear()

    def flush_run() -> None:
        if len(run) == 1:
            out.add(run[0])
        out.update(run[i] + run[i + 1] for i in range(len(run) - 1))
        run.clear()

    for ch in text:
        if _is_cjk(ch):
            flush_word()
            run.append(ch)
        elif ch.isalnum() or ch in "._-/'":
            flush_run()
            word.append(ch)
        else:
            flush_word()
            flush_run()
    flush_word()
    flush_run()
    return frozenset(out)


def _similar(a: frozenset[str], b: frozenset[str]) -> bool:
    if not a or not b:
        return False
    shared = len(a & b)
    return shared >= MIN_SHARED and shared >= OVERLAP * min(len(a), len(b))


def reversed_clauses(prompts: Sequence[str]) -> tuple[set[int], dict[int, set[int]]]:
    """For prompts oldest first: (the indexes of the corrections, prompt index -> indexes of
    its clauses (in ``prompts.clauses`` order) that a later correction reverses).

    A correction's own clauses can be reversed by a later one, so a correction stays in
    force only while something of it does.
    """
    split = [[c for c, _mark in clauses(p)] for p in prompts]
    keyed = [[terms(c) for c in cs] for cs in split]
    fixes = {i for i, p in enumerate(prompts) if is_correction(p)}
    gone: dict[int, set[int]] = {}
    for i in sorted(fixes):
        mine = [t for t in keyed[i] if t]
        for j in range(i):
            for k, theirs in enumerate(keyed[j]):
                if any(_similar(t, theirs) for t in mine):
                    gone.setdefault(j, set()).add(k)
    return fixes, gone
