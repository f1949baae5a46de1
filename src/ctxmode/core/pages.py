"""Read table rows straight from a SQLite file's pages, for a file SQLite refuses to open.

When the schema table itself is damaged (a truncated file loses the overflow pages that hold the
long ``CREATE TRIGGER`` texts), SQLite reports the whole file as malformed and no statement
runs, though most table pages are intact. This module walks the b-trees itself: the schema
table (page 1) gives each table's root page (its name and root sit in the page, before the long
SQL text), and each table's b-tree gives its rows (rowid and record values). Unreadable pages
are skipped. Only rowid tables are read, which is all a ctxmode store has.

Format: https://www.sqlite.org/fileformat2.html (b-tree pages, cells, records, overflow).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator

_TABLE_LEAF, _TABLE_INTERIOR = 13, 5


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = 0
    for i in range(9):
        byte = data[pos + i]
        if i == 8:
            return (value << 8) | byte, pos + 9
        value = (value << 7) | (byte & 0x7F)
        if byte < 0x80:
            return value, pos + i + 1
    raise ValueError("bad varint")


class PageFile:
    """The pages of a (possibly damaged) SQLite file held in memory."""

    def __init__(self, data: bytes) -> None:
        if len(data) < 100 or not data.startswith(b"SQLite format 3\0"):
            raise ValueError("no SQLite header")
        size = int.from_bytes(data[16:18], "big")
        self.page_size = 65536 if size == 1 else size
        if self.page_size < 512 or self.page_size & (self.page_size - 1):
            raise ValueError("bad page size")
        self.usable = self.page_size - data[20]
        self.data = data
        self.pages = len(data) // self.page_size

    def page(self, number: int) -> bytes:
        if not 1 <= number <= self.pages:
            raise ValueError(f"page {number} is past the end of the file")
        start = (number - 1) * self.page_size
        return self.data[start : start + self.page_size]

    def _payload(self, page: bytes, pos: int, total: int) -> bytes:
        """A cell's payload from ``pos`` (local part plus overflow pages, as far as readable)."""
        x = self.usable - 35
        if total <= x:
            return page[pos : pos + total]
        m = ((self.usable - 12) * 32 // 255) - 23
        k = m + (total - m) % (self.usable - 4)
        local = k if k <= x else m
        out = bytearray(page[pos : pos + local])
        next_page = int.from_bytes(page[pos + local : pos + local + 4], "big")
        seen: set[int] = set()
        while next_page and len(out) < total and next_page not in seen:
            seen.add(next_page)
            try:
                over = self.page(next_page)
            except ValueError:
                break
            next_page = int.from_bytes(over[:4], "big")
            out += over[4 : 4 + min(self.usable - 4, total - len(out))]
        return bytes(out)

    def rows(self, root: int) -> Iterator[tuple[int, list[object]]]:
        """(rowid, values) of every readable row of the table b-tree at page ``root``."""
        stack, seen = [root], set()
        while stack:
            number = stack.pop()
            if number in seen:
                continue
            seen.add(number)
            try:
                page = self.page(number)
                base = 100 if number == 1 else 0
                kind = page[base]
                count = int.from_bytes(page[base + 3 : base + 5], "big")
                if kind == _TABLE_INTERIOR:
                    stack.append(int.from_bytes(page[base + 8 : base + 12], "big"))
                    cells = base + 12
                    for i in range(count):
                        at = int.from_bytes(page[cells + 2 * i : cells + 2 * i + 2], "big")
                        stack.append(int.from_bytes(page[at : at + 4], "big"))
                    continue
                if kind != _TABLE_LEAF:
                    continue
                cells = base + 8
                found = []
                for i in range(count):
                    try:
                        at = int.from_bytes(page[cells + 2 * i : cells + 2 * i + 2], "big")
                        total, at = _varint(page, at)
                        rowid, at = _varint(page, at)
                        found.append((rowid, _record(self._payload(page, at, total))))
                    except (ValueError, IndexError, UnicodeDecodeError):
                        continue
                yield from found
            except (ValueError, IndexError):
                continue

    def tables(self) -> dict[str, int]:
        """Table name -> root page, from the schema table."""
        out: dict[str, int] = {}
        for _rowid, values in self.rows(1):
            if len(values) >= 4 and values[0] == "table" and isinstance(values[3], int):
                out[str(values[1])] = values[3]
        return out


def _record(payload: bytes) -> list[object]:
    header_size, pos = _varint(payload, 0)
    types = []
    while pos < header_size:
        serial, pos = _varint(payload, pos)
        types.append(serial)
    values: list[object] = []
    at = header_size
    for serial in types:
        if serial == 0:
            values.append(None)
        elif 1 <= serial <= 6:
            width = (1, 2, 3, 4, 6, 8)[serial - 1]
            if at + width > len(payload):
                values.append(None)
                at += width
                continue
            values.append(int.from_bytes(payload[at : at + width], "big", signed=True))
            at += width
        elif serial == 7:
            import struct

            values.append(
                struct.unpack(">d", payload[at : at + 8])[0] if at + 8 <= len(payload) else None
            )
            at += 8
        elif serial in (8, 9):
            values.append(serial - 8)
        elif serial >= 12:
            size = (serial - 12) // 2
            chunk = payload[at : at + size]
            if len(chunk) < size:
                values.append(None)
            elif serial % 2:
                values.append(chunk.decode("utf-8"))
            else:
                values.append(bytes(chunk))
            at += size
        else:
            values.append(None)
    return values
