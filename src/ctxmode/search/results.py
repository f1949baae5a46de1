"""What a search returns: compact hits, the result that holds them, and full items (``get``).

Frozen values with ``to_dict`` for the JSON faces and ``flags`` for the text listings, so the
CLI and the MCP server render them alike.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


def _flags(superseded: bool, shared_by: str | None) -> str:
    return (" (superseded)" if superseded else "") + (
        f" (shared by {shared_by})" if shared_by else ""
    )


@dataclass(frozen=True)
class Hit:
    """One compact search result; fetch its full text with ``get_items([hit.id])``."""

    id: str
    kind: str
    title: str
    source: str
    type: str
    created_at: int
    snippet: str
    score: float
    superseded: bool = False
    #: Other items with the same text (whitespace aside), ranked lower and not shown as hits:
    #: "also in doc:34 (guide.md > Setup)", at most ``MAX_ALSO``.
    also: tuple[str, ...] = ()
    #: The owner of a context shared with the team (``ctxmode share``), else None.
    shared_by: str | None = None
    #: False for a neighbour of a match (the section after a question, the rest of a split
    #: section) that holds none of the query's words itself: shown as context, not a match.
    matched: bool = True

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "score": round(self.score, 4), "also": list(self.also)}

    @property
    def flags(self) -> str:
        """What a listing adds after the title: superseded, whose, where else it occurs, and
        that it is only next to a match."""
        flag = _flags(self.superseded, self.shared_by)
        flag += f" (also in {', '.join(self.also)})" if self.also else ""
        return flag + ("" if self.matched else f" ({NEIGHBOUR_NOTE})")


#: How a listing labels a hit that holds no query word (``Hit.matched`` False).
NEIGHBOUR_NOTE = "next to a match; holds none of the query's words"


@dataclass(frozen=True)
class SearchResult:
    """Hits for one query. ``corrected_query`` is set when the query was spelled differently.

    ``total`` counts every item that holds a query word (before ``limit``; neighbours shown
    for context, ``Hit.matched`` False, are not counted); ``truncated`` says hits were
    left out to stay within the budget or the limit; ``confident`` is False when even the best
    hit covers less than half of what the query asks for (treat it as "no good match").
    """

    query: str
    corrected_query: str | None
    hits: tuple[Hit, ...]
    total: int
    truncated: bool
    confident: bool = False

    @property
    def notice(self) -> str | None:
        """A sentence for people when the query was corrected."""
        if self.corrected_query is None:
            return None
        return f"no match for {self.query!r}; showing results for {self.corrected_query!r}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "corrected_query": self.corrected_query,
            "notice": self.notice,
            "total": self.total,
            "truncated": self.truncated,
            "confident": self.confident,
            "hits": [h.to_dict() for h in self.hits],
        }


@dataclass(frozen=True)
class Item:
    """The full text of one searchable item (cut to the budget when ``truncated``)."""

    id: str
    kind: str
    title: str
    source: str
    type: str
    created_at: int
    text: str
    truncated: bool = False
    superseded: bool = False
    shared_by: str | None = None

    @property
    def flags(self) -> str:
        """What a listing adds after the title: superseded, whose."""
        return _flags(self.superseded, self.shared_by)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)
