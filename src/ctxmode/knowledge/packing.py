"""Fit ranked items into a token budget, deterministically and without an LLM.

Token estimate: every CJK character (Han, kana, hangul, CJK punctuation, full-width forms)
counts as one token; the remaining characters count as one token per four, rounded up. It is
deliberately a little pessimistic for English prose (real tokenizers average ~4.2 chars) so a
packed text stays inside the budget the caller asked for.

Items are taken in rank order (highest tier first) while they fit. What does not fit is not
dropped silently: each remaining type gets one digest line listing the first sentence of its
items, then the ids of any that did not fit even there. If the digests need room, the
lowest-ranked full items give it up.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence

from ctxmode.core.models import Pack, RankedItem

_CJK = re.compile(
    r"[\u1100-\u11ff\u2e80-\u2fdf\u3000-\u303f\u3040-\u30ff\u3100-\u318f\u31a0-\u31ff"
    r"\u3200-\u33ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\ufe30-\ufe4f"
    r"\uff00-\uffef\U00020000-\U0002fa1f]"
)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？；;])\s+|(?<=[。！？；])|\n")
SENTENCE_CHARS = 80


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text`` (see the module docstring)."""
    if text.isascii():
        return (len(text) + 3) // 4
    cjk = len(_CJK.findall(text))
    other = len(text) - cjk
    return cjk + (other + 3) // 4


def first_sentence(text: str, limit: int = SENTENCE_CHARS) -> str:
    """The first sentence (or line) of ``text``, cut to ``limit`` characters."""
    stripped = text.strip()
    head = _SENTENCE_END.split(stripped, maxsplit=1)[0].strip() if stripped else ""
    if len(head) > limit:
        head = head[: limit - 1].rstrip() + "…"
    return head


def render_item(item: RankedItem) -> str:
    c = item.context
    date = time.strftime("%Y-%m-%d", time.gmtime(c.updated_at))
    flags = " · stale" if c.stale else ""
    if c.superseded_by is not None:
        flags += f" · superseded by #{c.superseded_by}"
    if c.metadata.get("shared_id"):
        flags += f" · shared by {c.owner}"
    return f"[{c.type} #{c.id} · {date}{flags}] {c.content}"


def _digest_lines(
    items: Sequence[RankedItem], room: int, after: bool = False
) -> tuple[list[str], list[int], list[int], int]:
    """One line per type within ``room`` tokens, saying what it folds: ``[3 more decisions,
    first words] #9 Use pytest…; #2 … (left out: #3)``, or ``[2 constraints left out: #1
    #5]`` when not even first words fit. ``after``: full items were printed before ("more").

    Returns (lines, ids shown with a sentence, ids only counted, types left without a line).
    """
    groups: dict[str, list[RankedItem]] = {}
    for item in items:
        groups.setdefault(item.context.type, []).append(item)
    lines: list[str] = []
    digested: list[int] = []
    omitted: list[int] = []
    used = 0
    missing = 0
    for ctype, members in groups.items():
        what = f"{len(members)} {'more ' if after else ''}{ctype}{'' if len(members) == 1 else 's'}"
        parts: list[str] = []
        line_ids: list[int] = []
        for item in members:
            part = f"#{item.context.id} {first_sentence(item.context.content)}"
            tail = len(members) - len(parts) - 1
            probe = f"[{what}, first words] " + "; ".join([*parts, part])
            probe += f" (and {tail} left out)" if tail else ""
            if used + estimate_tokens(probe) + 1 > room:
                break
            parts.append(part)
            line_ids.append(item.context.id)
        rest = [i.context.id for i in members if i.context.id not in line_ids]
        ids = " ".join(f"#{i}" for i in rest)
        if parts:
            line = f"[{what}, first words] " + "; ".join(parts)
            if rest:
                full = f"{line} (left out: {ids})"
                fits = used + estimate_tokens(full) + 1 <= room
                line = full if fits else f"{line} (and {len(rest)} left out)"
        else:
            line = f"[{what} left out: {ids}]"
            if used + estimate_tokens(line) + 1 > room:
                line = f"[{what} left out]"
        cost = estimate_tokens(line) + 1
        if used + cost > room:
            omitted.extend(i.context.id for i in members)
            missing += 1
            continue
        used += cost
        lines.append(line)
        digested.extend(line_ids)
        omitted.extend(rest)
    return lines, digested, omitted, missing


def pack(items: Sequence[RankedItem], budget_tokens: int | None) -> Pack:
    """Pack ``items`` (already ranked) into ``budget_tokens``; None means no limit."""
    rendered = [render_item(i) for i in items]
    if budget_tokens is None:
        text = "\n".join(rendered)
        return Pack(
            text=text,
            included=tuple(i.context.id for i in items),
            digested=(),
            omitted=(),
            tokens=estimate_tokens(text),
            budget_tokens=None,
        )
    costs = [estimate_tokens(r) + 1 for r in rendered]
    count = 0
    used = 0
    for cost in costs:
        if used + cost > budget_tokens:
            break
        used += cost
        count += 1
    while True:
        leftovers = items[count:]
        lines, digested, omitted, missing = _digest_lines(
            leftovers, budget_tokens - used, after=count > 0
        )
        if not missing or count == 0:
            break
        count -= 1
        used -= costs[count]
    text = "\n".join([*rendered[:count], *lines])
    return Pack(
        text=text,
        included=tuple(i.context.id for i in items[:count]),
        digested=tuple(digested),
        omitted=tuple(omitted),
        tokens=estimate_tokens(text),
        budget_tokens=budget_tokens,
    )
