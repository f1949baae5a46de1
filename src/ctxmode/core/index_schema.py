"""The search index's storage: its migration and its rebuild from the tables it derives from.

The searchable text of contexts, events and document chunks lives in ``search_items`` (one row
per item, kept by triggers and by ``search.writer``); ``search_fts`` (porter),
``search_trigram`` (substrings of contexts and events), ``search_cjk`` (CJK bigrams) and
``search_names_fts`` (the trigrams of the chunks' name vocabulary, ``search_names``) are FTS5
indexes derived from them, never the user's data: a damaged index is rebuilt from its source
table (``refill_fts``). For a document
chunk, ``search_items.body`` is the only copy of its text (``m011``): documents come back by
indexing their files again.
"""

from __future__ import annotations

import sqlite3

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


def m013_lean_chunks(conn: sqlite3.Connection) -> None:
    """Document chunks stored once, and indexed for substrings by their names only.

    ``search_trigram`` becomes contentless: its ``body`` column holds ``ctxmode_names(body)``
    for chunks (``core.names``: the distinct words with an underscore, a digit, an inner capital or
    8+ characters), and its ``title`` the title's names (a chunk's title repeats its file's
    path and headings); contexts and events keep their whole title and body, as before. On
    a 3,139-file repository this takes the store from 208 MB to about half and indexing time
    down by a third, while names (``ACCESS_TTL``, ``get_current_user``) and long words keep
    their substring matches. Search reads the table only for row ids and BM25, and the text of
    an item from ``search_items``. The rule of ``ctxmode_names`` must never change under the
    table (deletes give the old names again): a new rule needs a migration that rebuilds it.

    A chunk's text is stored once, in ``search_items.body``: ``chunks.content`` is emptied.
    ``indexing`` writes a chunk with empty content and its ``search_items`` row itself, with
    the neighbour context (``m005``) computed in Python; a chunk inserted with its text (by
    any other writer) still gets its item from the trigger, which then empties its content.
    ``idx_chunks_file`` (source, path, ordinal) replaces ``idx_chunks_path``:
    the chunk trigger's neighbour lookup (``m005``) used ``idx_chunks_source`` (source,
    ordinal) and read the same ordinal of every file of a folder, so a folder's indexing time
    grew with the square of its file count.
    """

    def names_of(row: str, column: str) -> str:
        text = f"{row}.{column}"
        return f"CASE {row}.item_kind WHEN 'chunk' THEN ctxmode_names({text}) ELSE {text} END"

    new_t, new_b = names_of("new", "title"), names_of("new", "body")
    old_t, old_b = names_of("old", "title"), names_of("old", "body")
    conn.executescript(
        f"""
        DROP TRIGGER chunks_search_ai;
        UPDATE chunks SET content = '';
        CREATE TRIGGER chunks_search_ai AFTER INSERT ON chunks WHEN new.content != '' BEGIN
            INSERT INTO search_items(item_kind, ref_id, title, body, source, type, created_at,
                                     context)
            VALUES ('chunk', new.id, new.title, new.content,
                    (SELECT label FROM sources WHERE id = new.source_id), new.kind,
                    new.created_at,
                    trim(coalesce((SELECT substr(s.body, -300) FROM chunks p
                                   JOIN search_items s ON s.item_kind = 'chunk'
                                   AND s.ref_id = p.id
                                   WHERE p.source_id = new.source_id AND p.path IS new.path
                                   AND p.ordinal = new.ordinal - 2
                                   ORDER BY p.id LIMIT 1), '')
                         || ' ' ||
                         coalesce((SELECT substr(s.body, -300) FROM chunks p
                                   JOIN search_items s ON s.item_kind = 'chunk'
                                   AND s.ref_id = p.id
                                   WHERE p.source_id = new.source_id AND p.path IS new.path
                                   AND p.ordinal = new.ordinal - 1
                                   ORDER BY p.id LIMIT 1), '')));
            UPDATE chunks SET content = '' WHERE id = new.id;
        END;
        DROP INDEX idx_chunks_path;
        CREATE INDEX idx_chunks_file ON chunks(source_id, path, ordinal);
        DROP TRIGGER search_items_ai;
        DROP TRIGGER search_items_ad;
        DROP TRIGGER search_items_au;
        DROP TABLE search_trigram;
        CREATE VIRTUAL TABLE search_trigram USING fts5(
            title, body, content='', tokenize='trigram'
        );
        INSERT INTO search_trigram(rowid, title, body)
            SELECT id, {new_t}, {new_b} FROM search_items AS new;
        CREATE TRIGGER search_items_ai AFTER INSERT ON search_items BEGIN
            INSERT INTO search_fts(rowid, title, body, context)
                VALUES (new.id, new.title, new.body, new.context);
            INSERT INTO search_trigram(rowid, title, body) VALUES (new.id, {new_t}, {new_b});
        END;
        CREATE TRIGGER search_items_ad AFTER DELETE ON search_items BEGIN
            INSERT INTO search_fts(search_fts, rowid, title, body, context)
                VALUES ('delete', old.id, old.title, old.body, old.context);
            INSERT INTO search_trigram(search_trigram, rowid, title, body)
                VALUES ('delete', old.id, {old_t}, {old_b});
        END;
        CREATE TRIGGER search_items_au AFTER UPDATE ON search_items BEGIN
            INSERT INTO search_fts(search_fts, rowid, title, body, context)
                VALUES ('delete', old.id, old.title, old.body, old.context);
            INSERT INTO search_trigram(search_trigram, rowid, title, body)
                VALUES ('delete', old.id, {old_t}, {old_b});
            INSERT INTO search_fts(rowid, title, body, context)
                VALUES (new.id, new.title, new.body, new.context);
            INSERT INTO search_trigram(rowid, title, body) VALUES (new.id, {new_t}, {new_b});
        END;
        """
    )


#: The statements that give the vocabulary's new names (``fresh``) their trigram rows, as the
#: chunk trigger runs them for each chunk written with its text (the indexer leaves a run's
#: names fresh and indexes them in bulk at its end: ``search.writer.index_fresh_names``).
NAMES_TO_FTS = (
    "INSERT INTO search_names_fts(rowid, name) SELECT id, name FROM search_names WHERE fresh = 1",
    "UPDATE search_names SET fresh = 0 WHERE fresh = 1",
)


def m015_name_vocabulary(conn: sqlite3.Connection) -> None:
    """Document chunks' names in one store-wide vocabulary, and chunks indexed by the indexer
    itself rather than by triggers.

    ``search_trigram`` held, for every chunk, the trigrams of its names (``m013``): on a
    2,950-file repository the costliest part of indexing and 28 of 117 MB, while the same
    ~74,000 distinct names (1 MB) recur across chunks. Now:

    - ``search_names`` holds each distinct name of any chunk once (``core.names``), and
      ``search_names_fts`` its trigrams (external content; a name gets its row while
      ``fresh``): a substring ("current_us") finds the names holding it there, and the chunks
      holding those names are found through ``search_fts`` (a name is a phrase of porter
      tokens: ``get_current_user`` is "get current user") and, for Latin runs inside CJK text
      ("FastAPI框架"), ``search_cjk`` (``search.lists.names_list``). The vocabulary only grows:
      a name no chunk holds any more finds nothing;
    - ``search_trigram`` keeps the whole text of contexts and events only;
    - a chunk's rows in ``search_fts``, ``search_cjk`` and the vocabulary are written by
      ``search.indexing`` in bulk, not by the ``search_items`` triggers: a trigger that writes
      an FTS5 table makes every statement flush FTS5's pending terms into a new segment (the
      statement's savepoint), so each chunk cost a segment per table and the merges that
      follow (porter: 2.4 s against 1.2 s written directly, same transactions). A chunk
      inserted with its text by any other writer still gets all of them from
      ``chunks_search_ai``. Deletes and updates keep their triggers (one statement per file);
    - a chunk's ``search_cjk`` guard is a Python function (``cjk.has_cjk``, a C-speed regex)
      rather than ``GLOB``, which tried the character class at every character (1.1 s per
      20 MB of chunks); contexts and events keep ``GLOB`` (short texts, and the hook path then
      compiles no regex). Both say whether the text holds a ``CJK_CLASS`` character, so a row
      is deleted under the same condition it was inserted.
    """
    # Written out, not read from ``core.cjk``: a shipped migration must not change with it.
    glob = "*[\u3040-\u30fa\u30fc-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]*"

    def guard(row: str) -> str:
        return (
            f"(CASE {row}.item_kind WHEN 'chunk' THEN ctxmode_has_cjk({row}.title, {row}.body) "
            f"ELSE ({row}.title GLOB '{glob}' OR {row}.body GLOB '{glob}') END)"
        )

    item = "FROM search_items s WHERE s.item_kind = 'chunk' AND s.ref_id = new.id"
    words = "json_each(ctxmode_vocab(s.title || char(10) || s.body)) j"
    names_to_fts = ";\n".join(NAMES_TO_FTS)
    conn.executescript(
        f"""
        DROP TRIGGER search_items_ai;
        DROP TRIGGER search_items_ad;
        DROP TRIGGER search_items_au;
        DROP TRIGGER search_cjk_ai;
        DROP TRIGGER search_cjk_ad;
        DROP TRIGGER search_cjk_au;
        DROP TABLE search_trigram;
        CREATE VIRTUAL TABLE search_trigram USING fts5(
            title, body, content='', tokenize='trigram'
        );
        INSERT INTO search_trigram(search_trigram, rank) VALUES ('automerge', 8);
        INSERT INTO search_trigram(rowid, title, body)
            SELECT id, title, body FROM search_items WHERE item_kind != 'chunk';
        CREATE TABLE search_names (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            fresh INTEGER NOT NULL DEFAULT 1
        );
        CREATE INDEX idx_search_names_fresh ON search_names(id) WHERE fresh = 1;
        CREATE VIRTUAL TABLE search_names_fts USING fts5(
            name, content='search_names', content_rowid='id', tokenize='trigram'
        );
        INSERT INTO search_names_fts(search_names_fts, rank) VALUES ('automerge', 8);
        CREATE TRIGGER search_names_ad AFTER DELETE ON search_names WHEN old.fresh = 0 BEGIN
            INSERT INTO search_names_fts(search_names_fts, rowid, name)
                VALUES ('delete', old.id, old.name);
        END;
        INSERT OR IGNORE INTO search_names(name)
            SELECT j.value FROM search_items AS s,
                json_each(ctxmode_vocab(s.title || char(10) || s.body)) AS j
            WHERE s.item_kind = 'chunk';
        {names_to_fts};
        CREATE TRIGGER search_items_ai AFTER INSERT ON search_items
            WHEN new.item_kind != 'chunk' BEGIN
            INSERT INTO search_fts(rowid, title, body, context)
                VALUES (new.id, new.title, new.body, new.context);
            INSERT INTO search_trigram(rowid, title, body) VALUES (new.id, new.title, new.body);
        END;
        CREATE TRIGGER search_items_ad AFTER DELETE ON search_items BEGIN
            INSERT INTO search_fts(search_fts, rowid, title, body, context)
                VALUES ('delete', old.id, old.title, old.body, old.context);
            INSERT INTO search_trigram(search_trigram, rowid, title, body)
                SELECT 'delete', old.id, old.title, old.body WHERE old.item_kind != 'chunk';
        END;
        CREATE TRIGGER search_items_au AFTER UPDATE ON search_items BEGIN
            INSERT INTO search_fts(search_fts, rowid, title, body, context)
                VALUES ('delete', old.id, old.title, old.body, old.context);
            INSERT INTO search_fts(rowid, title, body, context)
                VALUES (new.id, new.title, new.body, new.context);
            INSERT INTO search_trigram(search_trigram, rowid, title, body)
                SELECT 'delete', old.id, old.title, old.body WHERE old.item_kind != 'chunk';
            INSERT INTO search_trigram(rowid, title, body)
                SELECT new.id, new.title, new.body WHERE new.item_kind != 'chunk';
            INSERT OR IGNORE INTO search_names(name)
                SELECT value FROM json_each(ctxmode_vocab(new.title || char(10) || new.body))
                WHERE new.item_kind = 'chunk';
            {names_to_fts};
        END;
        CREATE TRIGGER search_cjk_ai AFTER INSERT ON search_items
            WHEN new.item_kind != 'chunk' AND {guard("new")} BEGIN
            INSERT INTO search_cjk(rowid, title, body)
                VALUES (new.id, ctxmode_bigrams(new.title), ctxmode_bigrams(new.body));
        END;
        CREATE TRIGGER search_cjk_ad AFTER DELETE ON search_items WHEN {guard("old")} BEGIN
            INSERT INTO search_cjk(search_cjk, rowid, title, body)
                VALUES ('delete', old.id, ctxmode_bigrams(old.title), ctxmode_bigrams(old.body));
        END;
        CREATE TRIGGER search_cjk_au AFTER UPDATE OF title, body ON search_items BEGIN
            INSERT INTO search_cjk(search_cjk, rowid, title, body)
                SELECT 'delete', old.id, ctxmode_bigrams(old.title), ctxmode_bigrams(old.body)
                WHERE {guard("old")};
            INSERT INTO search_cjk(rowid, title, body)
                SELECT new.id, ctxmode_bigrams(new.title), ctxmode_bigrams(new.body)
                WHERE {guard("new")};
        END;
        DROP TRIGGER chunks_search_ai;
        CREATE TRIGGER chunks_search_ai AFTER INSERT ON chunks WHEN new.content != '' BEGIN
            INSERT INTO search_items(item_kind, ref_id, title, body, source, type, created_at,
                                     context)
            VALUES ('chunk', new.id, new.title, new.content,
                    (SELECT label FROM sources WHERE id = new.source_id), new.kind,
                    new.created_at,
                    trim(coalesce((SELECT substr(s.body, -300) FROM chunks p
                                   JOIN search_items s ON s.item_kind = 'chunk'
                                   AND s.ref_id = p.id
                                   WHERE p.source_id = new.source_id AND p.path IS new.path
                                   AND p.ordinal = new.ordinal - 2
                                   ORDER BY p.id LIMIT 1), '')
                         || ' ' ||
                         coalesce((SELECT substr(s.body, -300) FROM chunks p
                                   JOIN search_items s ON s.item_kind = 'chunk'
                                   AND s.ref_id = p.id
                                   WHERE p.source_id = new.source_id AND p.path IS new.path
                                   AND p.ordinal = new.ordinal - 1
                                   ORDER BY p.id LIMIT 1), '')));
            INSERT INTO search_fts(rowid, title, body, context)
                SELECT s.id, s.title, s.body, s.context {item};
            INSERT INTO search_cjk(rowid, title, body)
                SELECT s.id, ctxmode_bigrams(s.title), ctxmode_bigrams(s.body) {item}
                AND ctxmode_has_cjk(s.title, s.body);
            INSERT OR IGNORE INTO search_names(name)
                SELECT j.value {item.replace("search_items s", "search_items s, " + words)};
            {names_to_fts};
            UPDATE chunks SET content = '' WHERE id = new.id;
        END;
        """
    )


# -- rebuilding a damaged search index in place (``core.repair``) -----------------------------
#
# Everything here reads what to rebuild from the file's own schema (``sqlite_master``): which
# FTS5 tables exist, and which triggers feed them with which expressions. A migration that adds,
# drops or changes an FTS table, or changes how rows are indexed, changes what gets rebuilt
# with no edit here.

#: The shadow tables FTS5 creates for a table ``x``: ``x_data``, ``x_idx`` ...
FTS_SHADOWS = ("data", "idx", "content", "docsize", "config")
#: Rows of a source table copied per refill transaction at first (adapted to ``_BATCH_S``).
_FIRST_BATCH = 256
#: What one refill transaction aims to last (seconds): short, so that writers get in between.
_BATCH_S = 0.05


def fts_tables(conn: sqlite3.Connection) -> dict[str, str]:
    """The FTS5 tables of the file: name -> its ``CREATE VIRTUAL TABLE`` text."""
    rows = conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL%'"
    ).fetchall()
    return {str(n): str(s) for n, s in rows if "fts5" in str(s).lower()}


def fts_shadows(conn: sqlite3.Connection, table: str) -> list[str]:
    """The shadow tables of FTS5 table ``table`` present in the file."""
    wanted = [f"{table}_{s}" for s in FTS_SHADOWS]
    marks = ", ".join("?" for _ in wanted)
    rows = conn.execute(
        f"SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ({marks})", wanted
    )
    return [str(r[0]) for r in rows]


def _top_level(sql: str) -> list[tuple[int, str]]:
    """(position, upper-cased word or ';') of the tokens of ``sql`` outside quotes and
    parentheses: enough to find a trigger's WHEN, BEGIN and END and split its body."""
    out: list[tuple[int, str]] = []
    depth, i, n = 0, 0, len(sql)
    closing = {"'": "'", '"': '"', "`": "`", "[": "]"}
    while i < n:
        ch = sql[i]
        if ch in closing:
            j = sql.find(closing[ch], i + 1)
            while ch != "[" and j != -1 and sql[j + 1 : j + 2] == ch:  # '' inside a string
                j = sql.find(closing[ch], j + 2)
            i = n if j == -1 else j + 1
        elif ch == "-" and sql.startswith("--", i):
            j = sql.find("\n", i)
            i = n if j == -1 else j + 1
        elif ch == "/" and sql.startswith("/*", i):
            j = sql.find("*/", i + 2)
            i = n if j == -1 else j + 2
        elif ch == "(":
            depth += 1
            i += 1
        elif ch == ")":
            depth -= 1
            i += 1
        elif ch == ";" and depth == 0:
            out.append((i, ";"))
            i += 1
        elif ch.isalpha() or ch == "_":
            j = i
            while j < n and (sql[j].isalnum() or sql[j] in "_$"):
                j += 1
            if depth == 0:
                out.append((i, sql[i:j].upper()))
            i = j
        else:
            i += 1
    return out


def _insert_target(statement: str) -> tuple[str, list[str]] | None:
    """(table, column names) of an ``INSERT INTO t(c, ...)`` statement, else None."""
    import re

    found = re.match(
        r'\s*INSERT\s+(?:OR\s+\w+\s+)?INTO\s+(?:main\.)?["`\[]?(\w+)["`\]]?\s*\(([^)]*)\)',
        statement,
        re.I,
    )
    if found is None:
        return None
    cols = [c.strip().strip('"`[]').lower() for c in found.group(2).split(",")]
    return found.group(1), cols


def fts_feeders(conn: sqlite3.Connection, table: str) -> list[tuple[str, str, str]]:
    """How rows reach FTS table ``table``: for each ``AFTER INSERT`` trigger that inserts
    into it, ``(source table, WHEN clause or '', the body's statements that insert rows into
    it)``. Commands (``INSERT INTO t(t, ...) VALUES ('delete', ...)``) are left out."""
    rows = conn.execute(
        "SELECT tbl_name, sql FROM sqlite_master WHERE type = 'trigger' ORDER BY name"
    ).fetchall()
    feeders: list[tuple[str, str, str]] = []
    for source, sql in rows:
        text = str(sql or "")
        tokens = _top_level(text)
        begin = next((p for p, w in tokens if w == "BEGIN"), None)
        if begin is None:
            continue
        head = [(p, w) for p, w in tokens if p < begin]
        on = next((i for i, (_, w) in enumerate(head) if w == "ON"), len(head))
        if [w for _, w in head[2:on]][-2:] != ["AFTER", "INSERT"]:
            continue  # only the triggers that run after a row is added
        when = next((p for p, w in head if w == "WHEN"), None)
        end = max(p for p, w in tokens if w == "END")
        body_start = begin + len("BEGIN")
        cuts = [p for p, w in tokens if w == ";" and body_start <= p < end]
        statements, last = [], body_start
        for cut in [*cuts, end]:
            statement = text[last:cut].strip()
            last = cut + 1
            target = _insert_target(statement)
            if target and target[0] == table and table.lower() not in target[1]:
                statements.append(statement)
        if statements:
            clause = text[when:begin].strip() if when is not None else ""
            feeders.append((str(source), clause, ";\n".join(statements) + ";"))
    if table in WRITER_FEEDS and _has_table(conn, WRITER_FEEDS[table][0]):
        feeders.append(WRITER_FEEDS[table])
    return feeders


#: The rows ``search.writer.insert_rows`` indexes itself, not through a trigger
#: (``m015_name_vocabulary``), as feeders in ``fts_feeders``' form: (source table, WHEN
#: clause, statements). A name still ``fresh`` gets its row from ``index_fresh_names``.
WRITER_FEEDS = {
    "search_fts": (
        "search_items",
        "WHEN new.item_kind = 'chunk'",
        "INSERT INTO search_fts(rowid, title, body, context) "
        "VALUES (new.id, new.title, new.body, new.context);",
    ),
    "search_cjk": (
        "search_items",
        "WHEN new.item_kind = 'chunk' AND ctxmode_has_cjk(new.title, new.body)",
        "INSERT INTO search_cjk(rowid, title, body) "
        "VALUES (new.id, ctxmode_bigrams(new.title), ctxmode_bigrams(new.body));",
    ),
    "search_names_fts": (
        "search_names",
        "WHEN new.fresh = 0",
        "INSERT INTO search_names_fts(rowid, name) VALUES (new.id, new.name);",
    ),
}


def _has_table(conn: sqlite3.Connection, name: str) -> bool:
    """Whether the file has table ``name`` and the vocabulary migration has run (before it,
    chunks were indexed by triggers, which ``fts_feeders`` reads)."""
    names = {
        str(r[0])
        for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name IN (?, 'search_names')",
            (name,),
        )
    }
    return name in names and "search_names" in names


def _empty(conn: sqlite3.Connection, table: str, create_sql: str) -> None:
    """Remove every row of FTS table ``table`` from its index."""
    if "content=" in create_sql.lower().replace(" ", ""):
        conn.execute(f'INSERT INTO "{table}"("{table}") VALUES (\'delete-all\')')
    else:
        conn.execute(f'DELETE FROM "{table}"')


def refill_fts(
    conn: sqlite3.Connection,
    table: str,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Index again every row that feeds FTS table ``table`` (one just recreated empty), with
    the very statements of the triggers that feed it (``fts_feeders``), replayed by a
    temporary trigger over a temporary copy of each batch of rows. Returns the rows read.

    ``conn`` is in autocommit mode and has the SQL functions the triggers call. Works in short
    ``BEGIN IMMEDIATE`` transactions (about ``_BATCH_S`` each) so that hooks and the CLI keep
    writing meanwhile: a row they add is indexed by the triggers themselves. A row they change
    or delete before its batch would make a trigger remove from the index what was never put
    there, so when another connection wrote between two batches (``PRAGMA data_version``), the
    rest is done in one transaction, from an empty index. ``progress(done, total)`` follows
    each batch. Raises ``LookupError`` when nothing feeds a contentless table.
    """
    create_sql = fts_tables(conn).get(table)
    if create_sql is None:
        raise LookupError(f"no FTS5 table {table}")
    feeders = fts_feeders(conn, table)
    if not feeders:
        if "content=''" in create_sql.replace(" ", "").replace('"', "'"):
            raise LookupError(f"nothing feeds the contentless FTS5 table {table}")
        _in_transaction(conn, f'INSERT INTO "{table}"("{table}") VALUES (\'rebuild\')')
        return 0
    copies: list[tuple[str, str, str]] = []  # (source, scratch table, copy statement)
    try:
        for number, (source, when, statements) in enumerate(feeders):
            cols = [str(r[1]) for r in conn.execute(f'PRAGMA main.table_info("{source}")')]
            names = ", ".join(f'"{c}"' for c in cols)
            scratch = f"ctxmode_refill_{number}"
            conn.execute(f'DROP TABLE IF EXISTS temp."{scratch}"')
            conn.execute(
                f'CREATE TEMP TABLE "{scratch}" AS SELECT {names} FROM main."{source}" WHERE 0'
            )
            conn.execute(
                f'CREATE TEMP TRIGGER "{scratch}_ai" AFTER INSERT ON "{scratch}" {when} '
                f"BEGIN {statements} END"
            )
            copy = (
                f'INSERT INTO temp."{scratch}"(rowid, {names}) SELECT rowid, {names} '
                f'FROM main."{source}" WHERE rowid > ? AND rowid <= ?'
            )
            copies.append((source, scratch, copy))
        return _refill(conn, table, create_sql, copies, progress)
    finally:
        for _, scratch, _ in copies:
            conn.execute(f'DROP TABLE IF EXISTS temp."{scratch}"')  # its trigger goes too


def _in_transaction(conn: sqlite3.Connection, sql: str) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        conn.execute(sql)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def _refill(
    conn: sqlite3.Connection,
    table: str,
    create_sql: str,
    copies: list[tuple[str, str, str]],
    progress: Callable[[int, int], None] | None,
) -> int:
    import time

    lowest = -(2**63)

    def version() -> int:
        return int(conn.execute("PRAGMA data_version").fetchone()[0])

    def copy(source: str, scratch: str, sql: str, low: int, high: int) -> int:
        done = conn.execute(sql, (low, high)).rowcount
        conn.execute(f'DELETE FROM temp."{scratch}"')
        return max(done, 0)

    def copy_all(source: str, scratch: str, sql: str) -> int:
        """Every row of ``source``, a slice at a time (the scratch table stays small)."""
        done, low = 0, lowest
        while True:
            upper = conn.execute(
                f'SELECT rowid FROM main."{source}" WHERE rowid > ? ORDER BY rowid '
                "LIMIT 1 OFFSET 4999",
                (low,),
            ).fetchone()
            high = 2**63 - 1 if upper is None else int(upper[0])
            done += copy(source, scratch, sql, low, high)
            if upper is None:
                return done
            low = high

    conn.execute("BEGIN IMMEDIATE")
    try:
        _empty(conn, table, create_sql)  # what triggers indexed since it was recreated
        tops = [
            conn.execute(f'SELECT max(rowid), count(*) FROM main."{s}"').fetchone()
            for s, _, _ in copies
        ]
        seen = version()
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    total = sum(int(t[1] or 0) for t in tops)
    read, batch = 0, _FIRST_BATCH
    for (source, scratch, sql), top in zip(copies, tops, strict=True):
        last, high = lowest, int(top[0] or 0)
        while last < high:
            started = time.monotonic()
            conn.execute("BEGIN IMMEDIATE")
            try:
                now = version()
                if now != seen:  # another connection wrote: the rest in this transaction
                    _empty(conn, table, create_sql)
                    read = 0
                    for s, sc, q in copies:
                        read += copy_all(s, sc, q)
                    conn.execute("COMMIT")
                    if progress is not None:
                        progress(read, read)
                    return read
                upper = conn.execute(
                    f'SELECT rowid FROM main."{source}" WHERE rowid > ? AND rowid <= ? '
                    "ORDER BY rowid LIMIT 1 OFFSET ?",
                    (last, high, batch - 1),
                ).fetchone()
                stop = high if upper is None else int(upper[0])
                read += copy(source, scratch, sql, last, stop)
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            seen, last = now, stop
            if progress is not None:
                progress(min(read, total), total)
            spent = time.monotonic() - started
            batch = max(32, min(20_000, int(batch * _BATCH_S / max(spent, 1e-3))))
    return read
