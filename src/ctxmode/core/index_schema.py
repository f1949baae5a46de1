"""The search index's storage: its migration and its rebuild from the tables it derives from.

The searchable text of contexts, events and document chunks lives in ``search_items`` (one row
per item, kept by triggers and by ``search.indexing``); ``search_fts`` (porter),
``search_trigram`` (substrings) and ``search_cjk`` (CJK bigrams) are FTS5 indexes derived from
it, never the user's data: a damaged index is rebuilt from ``search_items``. For a document
chunk, ``search_items.body`` is the only copy of its text (``m011``): documents come back by
indexing their files again.
"""

from __future__ import annotations

import sqlite3


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


#: The statements that give the vocabulary's new names (``fresh``) their trigram rows; the
#: indexer runs them once per transaction, the chunk trigger once per chunk.
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
