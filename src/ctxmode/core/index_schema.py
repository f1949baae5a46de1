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
