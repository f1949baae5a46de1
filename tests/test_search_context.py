"""Search recall helpers: neighbour context of chunks (m005), irregular word forms, rerank."""

from __future__ import annotations

import json
import re
import sqlite3
import time
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxmode import Store
from ctxmode.core import schema as sch
from ctxmode.search import query as sq
from ctxmode.search.chunking import Piece
from ctxmode.search.forms import forms_of
from ctxmode.search.indexing import index_pieces

CHAT = [
    ("chat", "Which city did you finally pick for the team retreat?", "question"),
    ("chat", "Oslo, because the fjords are calm in spring.", "answer"),
    ("chat", "Nice. I booked the train tickets yesterday.", "answer"),
    ("chat", "The budget spreadsheet is shared with everyone now.", "answer"),
]


def _index_chat(store: Store, label: str = "chat") -> None:
    pieces = [Piece(title, content, kind) for title, content, kind in CHAT]
    index_pieces(store, pieces, label, "content", size=sum(len(p.content) for p in pieces))


def _context_of(store: Store, content: str) -> str:
    row = store.conn.execute(
        "SELECT context FROM search_items WHERE item_kind = 'chunk' AND body = ?",
        (content,),
    ).fetchone()
    return str(row[0])


def test_chunk_gets_the_two_chunks_before_it_as_context(store: Store) -> None:
    _index_chat(store)
    assert _context_of(store, CHAT[0][1]) == ""
    assert _context_of(store, CHAT[1][1]) == CHAT[0][1]
    assert _context_of(store, CHAT[2][1]) == f"{CHAT[0][1]} {CHAT[1][1]}"
    # Only the two chunks just before: the question is three places before the last one.
    assert CHAT[0][1] not in _context_of(store, CHAT[3][1])


def test_context_is_cut_to_the_end_of_long_neighbours(store: Store) -> None:
    long_text = "start " + "filler " * 100 + "final words here"
    index_pieces(
        store,
        [Piece("a", long_text, "text"), Piece("b", "next piece", "text")],
        "long",
        "content",
        size=len(long_text),
    )
    context = _context_of(store, "next piece")
    assert len(context) == 300
    assert context.endswith("final words here")
    assert "start" not in context


def test_context_never_crosses_files_of_one_source(store: Store) -> None:
    now = int(time.time())
    with store.transaction() as conn:
        source_id = conn.execute(
            "INSERT INTO sources(label, kind, indexed_at) VALUES ('dir', 'file', ?)", (now,)
        ).lastrowid
        for path, ordinal, content in (
            ("a.md", 0, "alpha first"),
            ("a.md", 1, "alpha second"),
            ("b.md", 0, "beta first"),
            ("b.md", 1, "beta second"),
        ):
            conn.execute(
                "INSERT INTO chunks(source_id, ordinal, title, content, kind, created_at, path) "
                "VALUES (?, ?, ?, ?, 'markdown', ?, ?)",
                (source_id, ordinal, path, content, now, path),
            )
    assert _context_of(store, "beta first") == ""
    assert _context_of(store, "beta second") == "beta first"


def test_reply_is_found_through_the_question_it_answers(store: Store) -> None:
    _index_chat(store)
    # The reply holds none of the query's words; only its context (the question) does, and the
    # type filter keeps the question itself (and anything it could lend to) out.
    result = store.search("which city for the team retreat", type="answer")
    assert result.hits
    assert result.hits[0].snippet.startswith("Oslo")
    assert "Oslo" not in " ".join(h.snippet for h in result.hits[1:])


def test_words_of_the_item_itself_outrank_words_of_its_context(store: Store) -> None:
    _index_chat(store)
    result = store.search("train tickets")
    assert result.hits[0].snippet.replace("**", "").startswith("Nice. I booked")
    # The budget line has "train tickets" only in its context: found, but ranked below.
    found = [h.snippet.replace("**", "") for h in result.hits]
    assert any(s.startswith("The budget") for s in found[1:])


def test_contexts_and_events_keep_an_empty_context(store: Store) -> None:
    store.write_context("decision", "Use SQLite for the knowledge store")
    rows = store.conn.execute(
        "SELECT context FROM search_items WHERE item_kind = 'context'"
    ).fetchall()
    assert rows == [("",)]


def test_migration_backfills_context_of_existing_chunks(tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    conn.execute("CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)")
    for migration in sch.MIGRATIONS[:4]:
        sch._run_in_transaction(conn, migration)
        conn.execute("INSERT INTO _migrations VALUES (?, 0)", (migration.__name__,))
    source_id = conn.execute(
        "INSERT INTO sources(label, kind, indexed_at) VALUES ('old', 'content', 0)"
    ).lastrowid
    for ordinal, (title, content, kind) in enumerate(CHAT):
        conn.execute(
            "INSERT INTO chunks(source_id, ordinal, title, content, kind, created_at) "
            "VALUES (?, ?, ?, ?, ?, 0)",
            (source_id, ordinal, title, content, kind),
        )
    conn.execute("PRAGMA user_version = 4")
    conn.execute("COMMIT")
    conn.close()
    with Store.open(path) as store:
        assert _context_of(store, CHAT[1][1]) == CHAT[0][1]
        assert store.search("which city for the team retreat", type="answer").hits
        check = store.conn.execute(
            "INSERT INTO search_fts(search_fts, rank) VALUES ('integrity-check', 1)"
        )
        assert check is not None  # raises sqlite3.DatabaseError when the index is corrupt


def test_irregular_forms_are_one_group() -> None:
    assert set(forms_of("went")) == {"go", "gone"}
    assert "bought" in forms_of("buy")
    assert forms_of("painting") == ()
    term = sq.parse("Where did she go?").terms[0]
    assert term.text == "go" and "went" in term.forms
    assert '"went"' in (sq.porter_expression(sq.parse("go")) or "")


def test_question_words_and_irregular_verbs_find_the_answer(store: Store) -> None:
    # The answer is inserted last and is the longest, so without "go" -> "went" it would lose
    # every tie (same words matched, BM25 favours short items, ties go to the lower id).
    for text in (
        "Ana likes green tea in the morning.",
        "Ana wrote a poem about rain.",
        "Last July Ana went to Lisbon with her sister for a week of walks.",
    ):
        store.write_context("reference", text)
    result = store.search("Where did Ana go?")
    assert "Lisbon" in result.hits[0].snippet
    assert "**went**" in result.hits[0].snippet


def test_porter_stems_match_the_index_word_by_word(store: Store) -> None:
    words = ["hiking", "hike", "went", "caf\u00e9", "x_y", "running"]
    stems = sq.porter_stems(store.conn, words)
    assert stems["hiking"] == stems["hike"] == "hike"
    assert stems["went"] == "went"
    assert stems["running"] == "run"
    assert stems["caf\u00e9"] == "cafe"  # remove_diacritics, as the index does
    # A word the tokenizer cuts in two keeps its first piece and shifts no other word.
    assert stems["x_y"] == "x"


def _repository_words() -> list[str]:
    root = Path(__file__).resolve().parent.parent
    words: set[str] = set()
    for path in [*root.glob("src/ctxmode/**/*.py"), *root.glob("tests/*.py"), root / "README.md"]:
        words.update(t for t in sq.tokens(path.read_text(encoding="utf-8")) if t.isascii())
    return sorted(words)


def test_porter_stems_in_one_row_match_stems_word_by_word(store: Store) -> None:
    """Plain ASCII words are stemmed together in one row; the stems must be those each word
    gets alone, and words the tokenizer would cut or fold still get a row of their own."""
    words = [*_repository_words(), "caf\u00e9", "x_y", "\u5b66\u6821", "na\u00efve", "hiking"]
    alone = sq._stems_row_by_row(store.conn, words)
    assert len(alone) > 3000
    assert sq.porter_stems(store.conn, words) == alone


#: Text made of ASCII, the common non-ASCII separators, accented letters, CJK and emoji.
_MIXED_TEXT = st.text(
    alphabet=st.sampled_from(
        [chr(c) for c in range(32, 127)]
        + list(sq._COMMON_SEPARATORS)
        + ["\u00e9", "\u00df", "\u5b66", "\u00b2", "\U0001f600", "\u0301", "\n", "_"]
    ),
    max_size=80,
)


@given(_MIXED_TEXT)
@settings(max_examples=400, deadline=None)
def test_fast_tokenising_gives_the_regex_tokens(text: str) -> None:
    lowered = text.lower()
    assert sq.lowered_tokens(lowered) == sq.TOKEN.findall(lowered)


def test_accented_words_count_in_the_rerank(store: Store) -> None:
    """A token outside ASCII is always stemmed (the index folds diacritics), so the rerank
    sees "\u00e9cole" in the text as the query's "ecole": the match is confident."""
    first = store.write_context("reference", "Lunch at the \u00e9cole cantine on Fridays.").id
    store.write_context("reference", "Lunch at the office on Mondays.")
    for query in ("ecole", "\u00e9cole"):
        result = store.search(query)
        assert [h.id for h in result.hits] == [f"ctx:{first}"]
        assert result.confident


def test_source_filter_bounds_rowids_without_losing_interleaved_items(store: Store) -> None:
    """The source filter passes the source's lowest and highest row id to FTS5: items of
    another source written in between stay out, and every item of the source stays in."""
    contexts = []
    for i in range(3):
        contexts.append(f"ctx:{store.write_context('reference', f'kestrel sighting {i}').id}")
        with store.transaction() as conn:
            conn.execute(
                "INSERT INTO events(session_id, agent, category, type, priority, data, "
                "content_hash, created_at) VALUES ('s1', 'claude', 'decision', 'note', 2, ?, ?, ?)",
                (json.dumps({"text": f"kestrel sighting event {i}"}), f"h{i}", int(time.time())),
            )
    knowledge = store.search("kestrel sighting", source="knowledge", limit=10).hits
    assert sorted(h.id for h in knowledge) == sorted(contexts)
    events = store.search("kestrel sighting", source="events", limit=10).hits
    assert len(events) == 3 and all(h.id.startswith("evt:") for h in events)


def _spans_by_definition(query: str, text: str) -> list[tuple[int, int]]:
    """What ``search_rank._match_spans`` must find, read plainly: every token of ``text`` whose
    light stem is a query word's; then, for a term no token matched that is CJK or at least
    ``SUBSTRING_MIN`` letters long, each place it occurs as a substring; overlaps merged."""
    from ctxmode.search import rank as sr

    parsed = sq.parse(query)
    stems = {sq.light_stem(w): t for t in parsed.terms if not t.cjk for w in t.spellings}
    spans, seen = [], set()
    for m in sq.TOKEN.finditer(text):
        term = stems.get(sq.light_stem(m.group(0).lower()))
        if term is not None:
            spans.append((m.start(), m.end()))
            seen.add(term)
    for term in parsed.terms:
        if term not in seen and (term.cjk or len(term.text) >= sr.SUBSTRING_MIN):
            hay = text if term.cjk else text.lower()
            spans += [(m.start(), m.end()) for m in re.finditer(re.escape(term.text), hay)]
    out: list[tuple[int, int]] = []
    for s, e in sorted(spans):
        if out and s < out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


@given(
    st.lists(
        st.sampled_from(["paint", "studies", "Running", "go", "city", "x", "cafe", "\u5b66\u6821"]),
        min_size=1,
    ),
    st.text(
        alphabet=st.sampled_from(
            list("abcdefghijklmnopqrstuvwxyz PAINTSTUDYGO-_'.\n")
            + ["\u00e9", "\u5b66", "\u6821", "\u00b7", "\u0130", "\u00df"]
        ),
        max_size=120,
    ),
)
@settings(max_examples=300, deadline=None)
def test_snippet_matches_are_the_tokens_with_a_query_stem(words: list[str], text: str) -> None:
    from ctxmode.search import rank as sr

    query = " ".join(words)
    assert sr._match_spans(sq.parse(query), text) == _spans_by_definition(query, text)
