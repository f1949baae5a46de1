"""``Database``: owns the SQLite connection of one project's knowledge file.

Opening a store creates the file (mode 0600, folder 0700) if needed, applies the connection
pragmas (WAL, busy_timeout, foreign keys, synchronous=NORMAL) and migrates once. Writes run in
short ``BEGIN IMMEDIATE`` transactions, retried with backoff while another process holds the
write lock. Domain modules take a ``Database``; ``ctxmode.store.Store`` extends it with the
domain operations as methods, so that callers hold one object.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import sys
import time

from ctxmode.core import cjk, config, names, schema
from ctxmode.core.errors import (
    CorruptDatabase,
    NotACtxmodeDatabase,
    StoreError,
    StoreUnavailable,
)

# Hooks open a store on every tool call: no typing, pathlib, contextlib or getpass at import
# time (see ``_lean``); ``path`` and ``root`` become ``Path`` objects only when asked for.
TYPE_CHECKING = False  # mypy reads it as true; nothing imported at run time
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path
    from types import TracebackType
    from typing import Any, Self

    from ctxmode.core.salvage import SalvageReport


_LOCKED_MESSAGES = ("database is locked", "database table is locked", "database is busy")


#: Auto-checkpoint threshold (pages) of a connection with a bounded lock wait (hooks); SQLite's
#: default is 1,000.
BOUNDED_AUTOCHECKPOINT = 10_000
#: busy_timeout while ``Database._begin`` polls for the write lock (milliseconds).
_POLL_MS = 2
#: The file a writer waiting for the lock keeps fresh (``Database._begin``), next to the store.
WAITING_SUFFIX = "-waiting"
_TOUCH_EVERY_S = 0.05
_STALE_WAIT_S = 1.0


def _touch(path: str) -> None:
    try:
        with open(path, "a"):
            pass
        os.utime(path)
    except OSError:
        pass  # a read-only folder: long operations just do not pause


def is_locked(exc: BaseException) -> bool:
    """Whether a raw sqlite3 error means another connection holds the lock."""
    return isinstance(exc, sqlite3.OperationalError) and any(
        m in str(exc).lower() for m in _LOCKED_MESSAGES
    )


def lock_held(exc: BaseException) -> bool:
    """Whether a ``StoreError`` was raised because another connection held the lock (and
    not, say, because the file is read-only): waiting, or coming back later, would help."""
    return exc.__cause__ is not None and is_locked(exc.__cause__)


#: Messages of a damaged file ("vtable constructor failed": an FTS5 table's pages are damaged).
_DAMAGE_MESSAGES = ("not a database", "malformed", "corrupt", "vtable constructor failed")


def translate_sqlite_error(exc: sqlite3.Error, path: str | os.PathLike[str]) -> StoreError:
    """Map a raw sqlite3 error to a ``StoreError`` that says what to do."""
    text = str(exc).lower()
    if any(m in text for m in _DAMAGE_MESSAGES):
        return CorruptDatabase(
            f"{path} is not a readable ctxmode database ({exc}); run `ctxmode doctor --repair`: "
            "it rebuilds a damaged search index in place, or copies every readable row into a "
            "new store (hooks do it by themselves)"
        )
    if "readonly" in text or "read-only" in text:
        return StoreUnavailable(
            f"{path} is read-only ({exc}); make the file and its folder writable by you"
        )
    if "disk is full" in text or "disk i/o" in text:
        return StoreUnavailable(f"cannot write {path} ({exc}); free disk space and retry")
    if is_locked(exc):
        return StoreUnavailable(
            f"{path} stayed locked by another process ({exc}); retry, or stop the process "
            "holding it"
        )
    return StoreUnavailable(
        f"cannot use {path} ({exc}); check that the path is a writable file location"
    )


#: SQLite's primary result codes for a damaged file: SQLITE_CORRUPT and SQLITE_NOTADB.
_DAMAGE_CODES = (11, 26)


def is_damage(exc: BaseException | None) -> bool:
    """True when ``exc`` (or an error it was raised from) says the database file is damaged.

    Checks SQLite's result code rather than the message: "malformed JSON" from ``json_extract``
    is a query error, not a damaged file, and must never get a healthy store moved aside.
    """
    while exc is not None:
        code = getattr(exc, "sqlite_errorcode", None)
        if isinstance(code, int) and code & 0xFF in _DAMAGE_CODES:
            return True
        if isinstance(exc, sqlite3.DatabaseError) and "vtable constructor failed" in str(exc):
            return True
        exc = exc.__cause__
    return False


#: Result codes that describe the file or its storage, not the statement: SQLITE_PERM, BUSY,
#: LOCKED, READONLY, IOERR, CORRUPT, FULL, CANTOPEN, NOTADB.
_ENVIRONMENT_CODES = (3, 5, 6, 8, 10, 11, 13, 14, 26)


def is_environmental(exc: BaseException) -> bool:
    """True for a sqlite3 error about the store's file or disk (never a bad statement)."""
    code = getattr(exc, "sqlite_errorcode", None)
    return (
        isinstance(exc, sqlite3.Error)
        and isinstance(code, int)
        and code & 0xFF in _ENVIRONMENT_CODES
    )


#: ``.context/.gitignore``: git sees nothing of the folder but the team knowledge files
#: (``ctxmode share``), so neither the store nor the user's own ``.gitignore`` needs an edit.
GITIGNORE = (
    "# Written by ctxmode: the store stays out of git; shared/*.md is team knowledge.\n"
    "*\n!shared/\n!shared/*.md\n"
)
#: What earlier versions wrote (everything ignored); ``write_gitignore`` replaces it.
_OLD_GITIGNORE = "*\n"


def write_gitignore(folder: str) -> bool:
    """Write ``GITIGNORE`` into ``folder`` when it has none, or when it holds exactly what an
    earlier version wrote; a file the user changed is left alone. True when written."""
    path = os.path.join(folder, ".gitignore")
    try:
        with open(path, encoding="utf-8") as handle:
            if handle.read() != _OLD_GITIGNORE:
                return False
    except FileNotFoundError:
        pass
    except (OSError, UnicodeDecodeError):
        return False
    os.makedirs(folder, mode=0o700, exist_ok=True)
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(GITIGNORE)
    return True


def _prepare_file(path: str) -> None:
    """Create the folder (0700) and an empty file (0600) before SQLite touches them.

    A ``.context`` folder also gets its ``.gitignore`` (``GITIGNORE``) when it has none.
    """
    if os.path.exists(path) and not os.path.isfile(path):
        raise StoreUnavailable(f"{path} exists and is not a file; pass a file path with --db")
    try:
        folder = os.path.dirname(path)
        if not os.path.exists(folder):
            os.makedirs(folder, mode=0o700, exist_ok=True)
        if os.path.basename(folder) == config.CONTEXT_DIR:
            ignore = os.path.join(folder, ".gitignore")
            if not os.path.exists(ignore):
                with open(ignore, "w", encoding="utf-8") as handle:
                    handle.write(GITIGNORE)
        if not os.path.exists(path):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            os.close(fd)
    except FileExistsError:
        pass
    except OSError as exc:
        raise StoreUnavailable(
            f"cannot create {path} ({exc.strerror}); choose a writable location with --db "
            "or CTXMODE_DB"
        ) from exc


def connect(path: str) -> sqlite3.Connection:
    """A connection to the store file at ``path`` with ctxmode's pragmas and the SQL
    functions its triggers call; not migrated (``Database.open`` does that)."""
    conn = sqlite3.connect(
        path,
        timeout=config.BUSY_TIMEOUT_MS / 1000,
        isolation_level=None,
        check_same_thread=False,
    )
    try:
        # The ``search_cjk`` triggers call it (schema.m008): every connection that may write
        # searchable items needs it. Registering costs a few microseconds; it only runs on
        # text holding CJK characters.
        conn.create_function(cjk.SQL_FUNCTION, 1, cjk.bigrams, deterministic=True)
        conn.create_function(names.SQL_FUNCTION, 1, names.names, deterministic=True)
        conn.create_function(names.VOCAB_FUNCTION, 1, names.vocab)
        conn.create_function(cjk.HAS_CJK_FUNCTION, 2, cjk.has_cjk, deterministic=True)
        conn.execute(f"PRAGMA busy_timeout = {config.BUSY_TIMEOUT_MS}")
        conn.execute("PRAGMA foreign_keys = ON")
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() != "wal":
            # Switching to WAL rewrites the file header: never do it to another program's file.
            schema.refuse_foreign(conn)
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
    except BaseException:
        conn.close()
        raise
    return conn


def _sqlite_header(path: str) -> bool:
    """Whether the file at ``path`` starts as a SQLite database does."""
    try:
        with open(path, "rb") as handle:
            return handle.read(16) == b"SQLite format 3\0"
    except OSError:
        return False


def quarantine(path: str | os.PathLike[str], now: float | None = None) -> str:
    """Move a bad store file (and its WAL/SHM) aside under a timestamped name; return it."""
    path = os.fspath(path)
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now or time.time()))
    target = f"{path}.bad-{stamp}"
    n = 1
    while os.path.exists(target):
        target = f"{path}.bad-{stamp}-{n}"
        n += 1
    os.replace(path, target)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.replace(path + suffix, target + suffix)
    return target


class _Transaction:
    """``Database.transaction()``: a class, not ``contextlib.contextmanager`` (hook import cost)."""

    __slots__ = ("_savepoint", "store")

    def __init__(self, store: Database) -> None:
        self.store = store
        self._savepoint: str | None = None

    def __enter__(self) -> sqlite3.Connection:
        conn = self.store.conn
        if conn.in_transaction:
            self._savepoint = f"sp_{id(self)}"
            conn.execute(f"SAVEPOINT {self._savepoint}")
        else:
            self.store._begin()
        return conn

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        conn, name = self.store.conn, self._savepoint
        if name is not None:
            if exc is not None:
                conn.execute(f"ROLLBACK TO {name}")
            conn.execute(f"RELEASE {name}")
            return
        if exc is not None:
            try:  # noqa: SIM105 - contextlib costs a hook ~1.6 ms to import
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            if isinstance(exc, sqlite3.Error) and is_environmental(exc):
                # Read-only, full, damaged or locked: the user's to fix, so say how.
                raise translate_sqlite_error(exc, self.store.db_file) from exc
            return
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as error:
            try:  # noqa: SIM105 - see above
                conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
            raise translate_sqlite_error(error, self.store.db_file) from error


class Database:
    """One project's store file, opened and migrated. ``Store`` adds the domain operations."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        path: str | os.PathLike[str],
        root: str | os.PathLike[str],
        settings: config.Settings,
        recovered_from: str | os.PathLike[str] | None = None,
    ) -> None:
        self.conn = conn
        #: The store file and the project root as strings (cheap); ``path``/``root`` as Paths.
        self.db_file = os.fspath(path)
        self.root_dir = os.fspath(root)
        self.settings = settings
        #: Where a corrupt file was moved when ``open(recover=True)`` replaced it.
        self.recovered_file = None if recovered_from is None else os.fspath(recovered_from)
        #: Attempts at the write lock before ``StoreUnavailable`` (see ``limit_lock_wait``),
        #: each as long as ``busy_ms``.
        self.lock_retries = config.LOCKED_RETRIES
        self.busy_ms = config.BUSY_TIMEOUT_MS

    @functools.cached_property
    def path(self) -> Path:
        """The store file."""
        from pathlib import Path

        return Path(self.db_file)

    @functools.cached_property
    def root(self) -> Path:
        """The project root that stored file paths are relative to."""
        from pathlib import Path

        return Path(self.root_dir)

    @property
    def recovered_from(self) -> Path | None:
        """Where ``open(recover=True)`` moved an unusable file, if it did."""
        from pathlib import Path

        return None if self.recovered_file is None else Path(self.recovered_file)

    def limit_lock_wait(self, busy_timeout_ms: int, retries: int) -> None:
        """Bound how long a write waits for another process's lock.

        At most ``retries`` attempts of ``busy_timeout_ms`` each, plus the backoff between them.
        Hooks use a short bound: an agent's tool call must not stall on a busy store.
        """
        self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
        # The commit that takes the log past the auto-checkpoint threshold copies it into the
        # file: while an index fills the log, that cost tens to hundreds of ms to whichever
        # hook committed next. A bounded writer leaves checkpoints to the others (the CLI, the
        # server, the index itself) unless the log grows ten times larger.
        self.conn.execute(f"PRAGMA wal_autocheckpoint = {BOUNDED_AUTOCHECKPOINT}")
        self.busy_ms = int(busy_timeout_ms)
        self.lock_retries = max(1, int(retries))

    # -- lifecycle of the handle -------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        root: str | os.PathLike[str] | None = None,
        recover: bool = False,
        create: bool = True,
    ) -> Self:
        """Open (creating and migrating as needed) the store at ``path``.

        ``root`` is the project root that file paths are relative to (default: the folder that
        holds ``.context``). With ``recover=True`` another program's database, or a file that is
        no SQLite database at all, is moved aside for a fresh store; ``recovered_from`` names
        the kept file. A damaged store raises ``CorruptDatabase`` (``core.repair.repair``
        mends it: hooks call it).
        """
        db_path = os.path.abspath(os.path.expanduser(path))
        project_root = os.path.realpath(root) if root else config.root_dir_for_db(db_path)
        if not create and not os.path.exists(db_path):
            raise StoreUnavailable(
                f"no ctxmode store here (looked for {db_path}); create one with `ctxmode init` "
                "in the project's top folder, or pass --db PATH to use an existing store"
            )
        _prepare_file(db_path)
        recovered: str | None = None
        try:
            conn = cls._open_checked(db_path)
        except (NotACtxmodeDatabase, CorruptDatabase) as exc:
            # A damaged SQLite file is for ``core.repair`` (its rows can be read back); one
            # with no SQLite header holds nothing to read: it is set aside like another
            # program's database.
            if not recover or (isinstance(exc, CorruptDatabase) and _sqlite_header(db_path)):
                raise
            recovered = quarantine(db_path)
            print(
                f"ctxmode: moved unusable store aside to {recovered} ({exc}); started a new one",
                file=sys.stderr,
            )
            _prepare_file(db_path)
            conn = cls._open_checked(db_path)
        return cls(conn, db_path, project_root, config.load_settings(project_root), recovered)

    @staticmethod
    def _open_checked(db_path: str) -> sqlite3.Connection:
        try:
            conn = connect(db_path)
        except sqlite3.Error as exc:
            raise translate_sqlite_error(exc, db_path) from exc
        try:
            for attempt in range(config.LOCKED_RETRIES):
                try:
                    schema.migrate(conn)
                    break
                except sqlite3.OperationalError as exc:
                    if not is_locked(exc) or attempt == config.LOCKED_RETRIES - 1:
                        raise
                    time.sleep(config.LOCKED_BACKOFF_S * (2**attempt))
        except sqlite3.Error as exc:
            conn.close()
            raise translate_sqlite_error(exc, db_path) from exc
        except BaseException:
            conn.close()
            raise
        return conn

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- transactions ------------------------------------------------------------------------

    def transaction(self) -> _Transaction:
        """A short write transaction (``BEGIN IMMEDIATE``), nested via SAVEPOINT.

        Use as ``with store.transaction() as conn:``. Waiting for the write lock is bounded:
        busy_timeout per attempt, then a few retries with exponential backoff, then
        ``StoreUnavailable``.
        """
        return _Transaction(self)

    def _begin(self) -> None:
        """``BEGIN IMMEDIATE``, polling every millisecond or so while another writer holds
        the lock, for as long as ``lock_retries`` waits of ``busy_timeout`` plus backoff.

        SQLite's own busy handler sleeps 1, 2, 5 ... then 100 ms between tries: against a
        writer that commits every ~20 ms and starts again soon after (a folder being indexed),
        it keeps missing the gaps (a hook waited 9x its usual time in bench/scale.py). Polling
        here takes the lock at the first gap, and the marker file it keeps fresh while it
        waits makes such a writer pause for it (``let_waiters_in``).
        """
        conn = self.conn
        conn.execute(f"PRAGMA busy_timeout = {_POLL_MS}")
        marker = ""
        try:
            try:
                conn.execute("BEGIN IMMEDIATE")
                return
            except sqlite3.OperationalError as exc:
                if not is_locked(exc):
                    raise translate_sqlite_error(exc, self.db_file) from exc
            backoff = sum(config.LOCKED_BACKOFF_S * 2**k for k in range(self.lock_retries - 1))
            deadline = time.monotonic() + self.busy_ms / 1000 * self.lock_retries + backoff
            marker = self.db_file + WAITING_SUFFIX
            touched = 0.0
            while True:
                now = time.monotonic()
                if now - touched > _TOUCH_EVERY_S:
                    _touch(marker)  # "a writer waits": a long operation pauses for it
                    touched = now
                try:
                    conn.execute("BEGIN IMMEDIATE")
                    return
                except sqlite3.OperationalError as exc:
                    if not is_locked(exc) or time.monotonic() >= deadline:
                        raise translate_sqlite_error(exc, self.db_file) from exc
                time.sleep(_POLL_MS / 2000)
        finally:
            if marker:
                try:  # noqa: SIM105 - contextlib is not loaded on the hook path
                    os.unlink(marker)
                except OSError:
                    pass
            conn.execute(f"PRAGMA busy_timeout = {self.busy_ms}")

    def let_waiters_in(self, most_s: float = 0.05) -> None:
        """Between two transactions of a long operation (an index, a repair): when another
        writer waits for the lock (``_begin`` keeps a marker file fresh meanwhile), pause
        until it has the lock (the marker is gone) or ``most_s`` has passed.

        Without it, a writer committing every ~20 ms and beginning again at once leaves a gap
        too short for a waiting hook's poll: hooks waited several transactions (up to 0.5 s
        in ``bench/scale.py``). One ``stat`` when nobody waits.
        """
        marker = self.db_file + WAITING_SUFFIX
        try:
            if time.time() - os.stat(marker).st_mtime > _STALE_WAIT_S:
                return  # left by a process that died waiting
        except OSError:
            return
        end = time.monotonic() + most_s
        while time.monotonic() < end:
            time.sleep(_POLL_MS / 2000)
            if not os.path.exists(marker):
                return

    def query(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]:
        """Run a read query and return rows addressable by column name."""
        try:
            cursor = self.conn.execute(sql, params)
        except sqlite3.OperationalError as exc:
            if "no such" in str(exc) or "syntax" in str(exc):
                raise
            raise translate_sqlite_error(exc, self.path) from exc
        cursor.row_factory = sqlite3.Row
        return list(cursor.fetchall())

    @functools.cached_property
    def default_owner(self) -> str:
        """Who writes when nobody is named, looked up once per store: git's ``user.name``
        for this project (what teammates see in commits), else the OS user."""
        import getpass
        import subprocess

        try:
            done = subprocess.run(
                ["git", "config", "user.name"],
                cwd=self.root_dir,
                capture_output=True,
                text=True,
                timeout=5,
                check=False,
            )
            if done.returncode == 0 and done.stdout.strip():
                return done.stdout.strip()[:200]
        except (OSError, subprocess.SubprocessError, UnicodeDecodeError):
            pass  # no git, or the folder is gone: the OS user
        try:
            return getpass.getuser()
        except Exception:  # noqa: BLE001 - no passwd entry in some containers
            return "unknown"


# -- salvage of a damaged store (the copying itself: ``core.salvage``) -----------------------


def salvage(path: str, log: Callable[[str], None] | None = None) -> tuple[str, SalvageReport]:
    """Replace the damaged store at ``path`` by a fresh one holding every readable row.

    Returns where the damaged file was moved and the counts. The new store is built beside the
    old one (``<path>.salvage``) and moved into place only when complete, so a crash midway
    leaves the damaged file where it was.
    """
    from ctxmode.core.salvage import copy_readable

    tmp = path + ".salvage"
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(tmp + suffix):
            os.remove(tmp + suffix)
    fresh = Database.open(tmp)
    try:
        report = copy_readable(path, fresh.conn, log)
        fresh.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        fresh.close()
    moved = quarantine(path)
    os.replace(tmp, path)
    for suffix in ("-wal", "-shm"):
        if os.path.exists(tmp + suffix):
            os.replace(tmp + suffix, path + suffix)
    return moved, report
