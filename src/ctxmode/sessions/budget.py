"""Fitting the snapshot's candidates into its byte budget, by shares that adapt to the session.

Each group of sections has a weight. A group that needs less than its share of the budget gets
what it needs and the rest goes to the other groups in proportion to their weights (water
filling): a session without errors spends their share on files and requests, and no long list
of one kind (tasks, files) crowds out the few items of another (a correction, the open error).
Within a group items go in order of importance (``Item.prio``, lowest first). Pinned items go
in first, whatever they cost. A file item goes in as its path, then its latest change, when
short (at most twice the path's bytes), while its group's share allows, before the next
(older) file; changes left out are added from what the whole budget leaves, and a file's
second-latest change only after every other detail. Whatever a group leaves unspent is
offered to the items left out, most important tier first; groups not named (reads, the
environment ...) get only that, and finished tasks (in the ``done`` count) are listed only
when every other item and every detail is in.

Hook path (pre-compact): standard library only.
"""

from __future__ import annotations

from ctxmode.sessions.vocab import CATEGORIES

TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time (see _lean)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["GROUPS", "Item", "fit"]

#: Group -> (weight, categories). Weights are shares of the budget left after pinned items.
GROUPS: dict[str, tuple[int, tuple[str, ...]]] = {
    "requests": (20, ("prompt", "correction")),
    "errors": (15, ("error",)),
    "decisions": (14, ("decision", "knowledge")),
    "files": (18, ("file",)),
    "tasks": (11, ("task",)),
    "constraints": (9, ("constraint", "rejected_approach", "rule", "blocker", "plan", "role")),
    "findings": (6, ("agent_finding",)),
    "git": (5, ("git",)),
}
_GROUP_OF = {c: g for g, (_w, cats) in GROUPS.items() for c in cats}
#: ``prio[0]`` of the requests that go in with the first pass: corrections in force (0, 1)
#: and the session's first request (2); ``sessions.state._requests`` sets them.
_GOAL_RANK = 2
#: Everything else (environment, loops, resolutions, reads ...) shares this weight.
_OTHER_WEIGHT = 2


def _nbytes(text: str) -> int:
    return len(text.encode("utf-8"))


class Item:
    """A candidate element of the snapshot; fitting edits ``text`` and ``pinned`` in place.

    ``rank`` = (tier, weight, order): the order is the event id (rendering goes oldest first);
    ``prio`` orders the items of a group, most important first; ``detail`` is text added only
    when the budget allows (a file's latest change); ``more`` a longer detail shown instead
    only when every item's detail is in and room is left (a file's two latest changes)."""

    __slots__ = ("attrs", "category", "detail", "more", "pinned", "prio", "rank", "text")

    def __init__(
        self,
        category: str,
        rank: tuple[int, int, int],
        pinned: bool,
        attrs: dict[str, Any],
        text: str | None,
        prio: tuple[Any, ...] = (),
        detail: str | None = None,
        more: str | None = None,
    ) -> None:
        self.category = category
        self.rank = rank
        self.pinned = pinned
        self.attrs = attrs
        self.text = text
        self.prio = prio or (-rank[1], -rank[2])
        self.detail = detail
        self.more = more


def _finished(item: Item) -> bool:
    return item.category == "task" and item.attrs.get("status") == "completed"


def _tier(item: Item) -> int:
    if _finished(item):
        return 3  # a finished task is history: shown only when nothing else needs the room
    # An item may rank below its category (``rank[0]``: an older question, answered in its
    # turn most likely): it then goes with the rest, after the named groups.
    return max(CATEGORIES.get(item.category, 1), item.rank[0])


def _group(item: Item) -> str:
    if _tier(item) > CATEGORIES.get(item.category, 1):
        return "other"
    return _GROUP_OF.get(item.category, "other")


def fit(
    head: str,
    items: list[Item],
    budget: int,
    *,
    size: Callable[[Item], int],
    section: Callable[[Item], str],
    wrapper: Callable[[str], int],
    render: Callable[[list[Item]], str],
) -> list[Item]:
    """The items that fit ``budget``: ``size`` = bytes of an item, ``section`` = its section,
    ``wrapper`` = bytes of a section's open and close tags (paid once per section), ``render``
    = the whole text of a list of items."""
    opened: set[str] = set()
    chosen: list[Item] = []
    used = _nbytes(head) + _nbytes("\n</session_knowledge>")

    def cost(item: Item) -> int:
        return size(item) + (0 if section(item) in opened else wrapper(section(item)))

    def take(item: Item) -> None:
        nonlocal used
        used += cost(item)
        opened.add(section(item))
        chosen.append(item)

    def size_with(item: Item, text: str) -> int:
        before = item.text
        item.text = text
        n = size(item)
        item.text = before
        return n

    def add_detail(item: Item, room: float) -> int:
        """Show the item's detail if it fits ``room`` and the budget; the bytes it took."""
        nonlocal used
        extra = _with_detail(item, size)
        if extra is None or extra > room or used + extra > budget:
            return 0
        used += extra
        item.text = item.detail
        return extra

    for item in sorted((i for i in items if i.pinned), key=lambda i: i.rank[2]):
        if item.detail is not None and item.text is None:
            item.text = item.detail
        take(item)
    groups: dict[str, list[Item]] = {}
    # Finished tasks are history, in the ``done`` count: listed only when every other item
    # and every detail is in.
    finished = sorted((i for i in items if not i.pinned and _finished(i)), key=lambda i: i.prio)
    for item in items:
        if not item.pinned and not _finished(item):
            groups.setdefault(_group(item), []).append(item)
    for g, members in groups.items():
        # The rest (reads, the environment, finished tasks ...) goes by tier first.
        members.sort(key=(lambda i: (_tier(i), i.prio)) if g == "other" else (lambda i: i.prio))
    weight = {g: GROUPS[g][0] if g in GROUPS else _OTHER_WEIGHT for g in groups}
    order = sorted(groups, key=lambda g: -weight[g])
    # Every group's most important item first (with its detail): one long item (the open
    # error, a finding) must not lose to many short ones because it exceeds its share.
    # Requests: every correction in force and the session's first request (its goal) too,
    # so that many short items of other groups cannot leave them out.
    for g in order:
        if g not in GROUPS:
            continue  # the rest gets only what the named groups leave
        while groups[g]:
            first = groups[g][0]
            if used + cost(first) > budget:
                break
            take(first)
            groups[g].pop(0)
            add_detail(first, budget)
            if not (g == "requests" and groups[g] and groups[g][0].prio[0] <= _GOAL_RANK):
                break
    # Then shares of what is left, again while a round takes something.
    while any(groups.values()):
        allowance = _shares(
            {g: _demand(m, chosen, size, section, wrapper, opened) for g, m in groups.items()},
            weight,
            budget - used,
        )
        took = False
        for g in order:
            spent = 0.0
            # In order of importance, up to the first that does not fit: a less important
            # item never goes in ahead of a more important one of its group.
            while groups[g]:
                item = groups[g][0]
                c = cost(item)
                if spent + c > allowance.get(g, 0) or used + c > budget:
                    break
                spent += c
                take(groups[g].pop(0))
                took = True
                # A short detail (a file's latest change, no more than twice the bytes of
                # the item) before the next, less recent, item: per byte it says as much.
                extra = _with_detail(item, size)
                if extra is not None and extra <= 2 * c:
                    spent += add_detail(item, allowance.get(g, 0) - spent)
            for item in sorted((i for i in chosen if _group(i) == g), key=lambda i: i.prio):
                spent += add_detail(item, allowance.get(g, 0) - spent)
        if not took:
            break
    # What the shares left unspent: the items left out and the details not shown, most
    # important tier first (a file's change before a read).
    left = [(i, False) for members in groups.values() for i in members]
    left += [(i, True) for i in chosen if i.detail is not None and i.text is None]
    left.sort(
        key=lambda s: (
            _tier(s[0]),
            -weight.get(_group(s[0]), 0),
            s[0].prio,
        )
    )
    for item, detail in left:
        if detail:
            add_detail(item, budget)
        elif used + cost(item) <= budget:
            take(item)
    for item in sorted(chosen, key=lambda i: i.prio):  # items taken just above
        add_detail(item, budget)
    everything_in = len(chosen) == sum(1 for i in items if not _finished(i)) and all(
        i.detail is None or i.text is not None for i in chosen
    )
    for item in finished if everything_in else []:
        if used + cost(item) <= budget:
            take(item)
    # Last, the longer details, most important item first.
    for item in sorted(chosen, key=lambda i: (_tier(i), i.prio)):
        if item.more is not None and item.text is not None and item.text == item.detail:
            shown = item.text
            extra = size_with(item, item.more) - size_with(item, shown)
            if used + extra <= budget:
                item.text = item.more
                used += extra
    return _shrink(chosen, budget, render)


def _demand(
    members: list[Item],
    chosen: list[Item],
    size: Callable[[Item], int],
    section: Callable[[Item], str],
    wrapper: Callable[[str], int],
    opened: set[str],
) -> int:
    """Bytes a group's remaining items need, with their sections and details."""
    extra = sum(_with_detail(i, size) or 0 for i in members)
    return (
        sum(size(i) for i in members)
        + extra
        + sum(wrapper(s) for s in {section(i) for i in members} - opened)
    )


def _shares(demand: dict[str, int], weight: dict[str, int], room: int) -> dict[str, float]:
    """Water filling: a group needing less than its weighted share gets what it needs; the
    rest is shared again among the others, in proportion to their weights."""
    allowance: dict[str, float] = {}
    active = {g for g, d in demand.items() if d > 0}
    remaining = float(max(0, room))
    while active:
        total = sum(weight[g] for g in active)
        met = {g for g in active if demand[g] <= remaining * weight[g] / total}
        if not met:
            for g in active:
                allowance[g] = remaining * weight[g] / total
            break
        for g in met:
            allowance[g] = demand[g]
            remaining -= demand[g]
        active -= met
    return allowance


def _with_detail(item: Item, size: Callable[[Item], int]) -> int | None:
    """Bytes the item's detail adds (None: it has none, or shows it already)."""
    if item.detail is None or item.text is not None:
        return None
    before = size(item)
    item.text = item.detail
    after = size(item)
    item.text = None
    return after - before


def _shrink(kept: list[Item], budget: int, render: Callable[[list[Item]], str]) -> list[Item]:
    """Over the budget still (only pinned items, too long): cut the longest text, then the
    next ...; at absurdly small budgets drop the oldest pinned tasks."""
    text = render(kept)
    while _nbytes(text) > budget:
        unpinned = [i for i in kept if not i.pinned]
        if unpinned:
            kept.remove(max(unpinned, key=lambda i: (_tier(i), i.prio)))
            text = render(kept)
            continue
        longest = max(kept, key=lambda i: len(i.text or ""), default=None)
        if longest is None or longest.text is None or len(longest.text) <= 8:
            break
        excess = _nbytes(text) - budget
        cut = max(8, len(longest.text) - excess - 1)
        longest.text = longest.text if len(longest.text) <= cut else longest.text[: cut - 1] + "…"
        text = render(kept)
    tasks = sorted((i for i in kept if i.category == "task"), key=lambda i: i.rank[2])
    while _nbytes(text) > budget and tasks:
        kept.remove(tasks.pop(0))
        text = render(kept)
    return kept
