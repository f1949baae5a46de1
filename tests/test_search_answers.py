"""Rerank features for question-style queries: an item that asks is not the answer, its reply
probably is, and a question about time prefers items that say when."""

from __future__ import annotations

import pytest

from ctxmode import Store
from ctxmode.search import rank as sr
from ctxmode.search.chunking import Piece
from ctxmode.search.indexing import index_pieces


def _texts(store: Store, query: str, **kw: object) -> list[str]:
    return [h.snippet.replace("**", "") for h in store.search(query, **kw).hits]  # type: ignore[arg-type]


def test_a_statement_outranks_a_question_with_the_same_words(store: Store) -> None:
    asking = store.write_context("reference", "What inspired the lake painting?")
    telling = store.write_context(
        "reference", "The lake painting was inspired by a long walk with my grandmother in autumn."
    )
    assert asking and telling
    texts = _texts(store, "what inspired the lake painting")
    assert texts[0].startswith("The lake painting was inspired")
    assert texts[1].startswith("What inspired")


def test_words_in_a_statement_part_of_an_item_are_not_discounted(store: Store) -> None:
    # The item also asks something, but the query's words are in its statement.
    store.write_context("reference", "Kiln firing went well at cone six. Did you glaze yours?")
    store.write_context("reference", "What temperature is a kiln firing at cone six?")
    texts = _texts(store, "kiln firing cone six")
    assert texts[0].startswith("Kiln firing went well")


def test_the_reply_to_a_matching_question_is_ranked_above_other_neighbours(store: Store) -> None:
    pieces = [
        Piece("chat", "Morning! The coffee machine is fixed.", "turn"),
        Piece("chat", "Great. What happened to the bridge model?", "turn"),
        Piece("chat", "It fell off the shelf and two beams cracked, so I am gluing them.", "turn"),
        Piece("chat", "Lunch is at noon in the usual place.", "turn"),
    ]
    index_pieces(store, pieces, "chat", "content", size=sum(len(p.content) for p in pieces))
    texts = _texts(store, "what happened to the bridge model")
    # The reply holds none of the query's words: it comes first through the question it
    # answers, and above the turn before the question, which also borders it.
    assert texts[0].startswith("It fell off the shelf")
    assert texts.index("Morning! The coffee machine is fixed.") > 1


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("When did Ana repaint the fence?", True),
        ("  when was the cache added", True),
        ("How long has the worker been failing?", True),
        ("What year did we move to Postgres?", True),
        ("which date was the release", True),
        ("whenever the cache is cold", False),
        ("fence repainted when", False),
        ("what did Ana paint", False),
    ],
)
def test_questions_about_time_are_recognised(query: str, expected: bool) -> None:
    assert sr.asks_when(query) is expected


def test_a_question_about_time_prefers_the_item_that_says_when(store: Store) -> None:
    store.write_context("reference", "Ana repainted the fence.")
    store.write_context(
        "reference", "Ana repainted the fence in green paint, it took her ages last week."
    )
    assert _texts(store, "When did Ana repaint the fence?")[0].endswith("last week.")
    # The same words without the question: the shorter, denser item stays first.
    assert _texts(store, "Ana repaint the fence")[0] == "Ana repainted the fence."


def test_question_marks_in_code_are_not_questions(store: Store) -> None:
    """In code a "?" is syntax (``ready ? flush() : wait()``): the same text scores lower as
    prose, where it reads as asking, than as a code chunk, which keeps the words' full weight."""
    text = "const next = ready ? flushQueue(batch) : waitForLock(batch);"
    index_pieces(store, [Piece("queue.ts", text, "code")], "code-src", "content", size=len(text))
    index_pieces(store, [Piece("queue.ts", text, "text")], "prose-src", "content", size=len(text))
    query = "ready flushQueue waitForLock"
    (code,) = store.search(query, source="code-src").hits
    (prose,) = store.search(query, source="prose-src").hits
    assert code.score > prose.score
