"""A minimal FlatBuffers writer and reader: exactly what `Exported`'s schema needs.

A buffer starts with the offset of its root table. A table starts with a signed
offset back to its *vtable* (the byte offsets of its fields, 0 for an absent one)
and holds scalars inline and unsigned forward offsets to strings, vectors and
other tables. The writer lays a parent out before its children and patches each
offset once the child is placed, so every offset points forward as the format
requires; scalars are aligned to their size, tables, strings and vectors to 4.
"""
from __future__ import annotations

import struct
from typing import Sequence

# Scalar kinds of table fields and vector elements: struct format characters.
UINT8, INT8, BOOL, INT16, UINT16, UINT32 = "B", "b", "?", "h", "H", "I"


class Table:
    """A table to write: `fields` maps slot numbers to `(kind, value)`; `kind` is a
    scalar kind, or None for a value written elsewhere (a `Table`, `str`,
    `bytes`, `Vector`)."""

    def __init__(self, fields: dict[int, tuple[str | None, object]]):
        self.fields = {slot: f for slot, f in fields.items() if f[1] is not None}


class Vector:
    """A vector to write: of scalars (`kind` a scalar kind) or of tables and strings
    (`kind` None)."""

    def __init__(self, items: Sequence, kind: str | None = None):
        self.items = list(items)
        self.kind = kind


def build(root: Table) -> bytes:
    """The buffer whose root table is `root`."""
    buf = bytearray(4)
    queue = [(0, root)]  # (position of an offset to patch, the object it points to)
    while queue:
        pos, obj = queue.pop(0)
        target = _write(buf, obj, queue)
        struct.pack_into("<I", buf, pos, target - pos)
    return bytes(buf)


def _align(buf: bytearray, n: int) -> None:
    buf.extend(b"\0" * (-len(buf) % n))


def _write(buf: bytearray, obj, queue: list) -> int:
    if isinstance(obj, Table):
        return _write_table(buf, obj, queue)
    if isinstance(obj, str):
        obj = obj.encode("utf-8")
        _align(buf, 4)
        pos = len(buf)
        buf += struct.pack("<I", len(obj)) + obj + b"\0"
        return pos
    if isinstance(obj, (bytes, bytearray)):
        return _write(buf, Vector(obj, UINT8), queue)
    if isinstance(obj, Vector):
        size = 4 if obj.kind is None else struct.calcsize(obj.kind)
        _align(buf, max(4, size))
        if size > 4:  # the elements, after the 4-byte length, must be aligned
            buf.extend(b"\0" * 4)
        pos = len(buf)
        buf += struct.pack("<I", len(obj.items))
        if obj.kind is not None:
            buf += struct.pack(f"<{len(obj.items)}{obj.kind}", *obj.items)
        else:
            for item in obj.items:
                queue.append((len(buf), item))
                buf += b"\0\0\0\0"
        return pos
    raise TypeError(f"cannot write {type(obj).__name__} into a flatbuffer")


def _write_table(buf: bytearray, table: Table, queue: list) -> int:
    slots = sorted(table.fields)
    n_slots = slots[-1] + 1 if slots else 0
    sizes = {s: 4 if table.fields[s][0] is None else struct.calcsize(table.fields[s][0])
             for s in slots}
    # Lay the fields out, largest first, to know the table's size.
    layout, end = {}, 4
    for slot in sorted(slots, key=lambda s: -sizes[s]):
        end += -end % sizes[slot]
        layout[slot] = end
        end += sizes[slot]
    end += -end % 4
    vtable_size = 4 + 2 * n_slots
    _align(buf, 2)
    vtable_pos = len(buf)
    entries = [layout.get(s, 0) for s in range(n_slots)]
    buf += struct.pack(f"<HH{n_slots}H", vtable_size, end, *entries)
    _align(buf, 4)
    pos = len(buf)
    buf += bytes(end)
    struct.pack_into("<i", buf, pos, pos - vtable_pos)
    for slot in slots:
        kind, value = table.fields[slot]
        if kind is None:
            queue.append((pos + layout[slot], value))
        else:
            struct.pack_into("<" + kind, buf, pos + layout[slot], value)
    return pos


class TableView:
    """A table read from a buffer; accessors take the field's slot number and return
    None (or the default) for an absent field. Reads past the end raise
    `struct.error`."""

    def __init__(self, buf: bytes, pos: int):
        self._buf = buf
        self._pos = pos
        self._vtable = pos - _unpack("<i", buf, pos)
        self._vtable_size = _unpack("<H", buf, self._vtable)

    @classmethod
    def root(cls, buf: bytes) -> TableView:
        return cls(buf, _unpack("<I", buf, 0))

    def _field(self, slot: int) -> int | None:
        entry = 4 + 2 * slot
        if entry + 2 > self._vtable_size:
            return None
        offset = _unpack("<H", self._buf, self._vtable + entry)
        return self._pos + offset if offset else None

    def _target(self, slot: int) -> int | None:
        pos = self._field(slot)
        return None if pos is None else pos + _unpack("<I", self._buf, pos)

    def scalar(self, slot: int, kind: str, default=0):
        pos = self._field(slot)
        return default if pos is None else _unpack("<" + kind, self._buf, pos)

    def has(self, slot: int) -> bool:
        return self._field(slot) is not None

    def string(self, slot: int) -> str | None:
        pos = self._target(slot)
        return None if pos is None else _string_at(self._buf, pos)

    def table(self, slot: int) -> TableView | None:
        pos = self._target(slot)
        return None if pos is None else TableView(self._buf, pos)

    def scalars(self, slot: int, kind: str) -> list:
        pos = self._target(slot)
        if pos is None:
            return []
        n = _unpack("<I", self._buf, pos)
        return list(struct.unpack_from(f"<{n}{kind}", self._buf, pos + 4))

    def bytes(self, slot: int) -> bytes | None:
        pos = self._target(slot)
        if pos is None:
            return None
        n = _unpack("<I", self._buf, pos)
        if pos + 4 + n > len(self._buf):
            raise struct.error("a byte vector runs past the end of the buffer")
        return bytes(self._buf[pos + 4:pos + 4 + n])

    def _offsets(self, slot: int) -> list[int]:
        pos = self._target(slot)
        if pos is None:
            return []
        n = _unpack("<I", self._buf, pos)
        elements = [pos + 4 + 4 * i for i in range(n)]
        return [p + _unpack("<I", self._buf, p) for p in elements]

    def tables(self, slot: int) -> list[TableView]:
        return [TableView(self._buf, p) for p in self._offsets(slot)]

    def strings(self, slot: int) -> list[str]:
        return [_string_at(self._buf, p) for p in self._offsets(slot)]


def _unpack(fmt: str, buf: bytes, pos: int):
    if pos < 0:
        raise struct.error(f"offset {pos} is outside the buffer")
    return struct.unpack_from(fmt, buf, pos)[0]


def _string_at(buf: bytes, pos: int) -> str:
    n = _unpack("<I", buf, pos)
    if pos + 4 + n > len(buf):
        raise struct.error("a string runs past the end of the buffer")
    return bytes(buf[pos + 4:pos + 4 + n]).decode("utf-8")
