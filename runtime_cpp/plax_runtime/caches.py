"""Caches that cannot outgrow the program: bounded by entries and bytes, and forgetting
whatever belonged to a dead function.

A `BoundedCache` entry may name objects by identity in its key (a function, a
Jaxpr, a lowering). The cache holds those objects only weakly: when one dies, every
entry naming it is dropped, so the traces, lowerings and executables of a function
the user let go are freed with it. Least recently used entries go first when the
entry count or the estimated byte size passes its bound.

Weak-reference callbacks may run in any thread and at any allocation (the garbage
collector); they only note the dead entry, and the next operation that can take
the lock purges it. A lookup also checks its entry's references, so an identity
reused by a new object after a death is never mistaken for the old one.
"""
from __future__ import annotations

import collections
import sys
import threading
import weakref
from typing import Any, Hashable, Iterable

_Entry = collections.namedtuple("_Entry", "value nbytes refs")

_all_caches: "weakref.WeakSet[BoundedCache]" = weakref.WeakSet()


class BoundedCache:
    """An LRU mapping bounded by `max_entries` and `max_bytes`, whose entries die with
    the objects they are keyed on (`put(..., owners=...)`).

    `front` holds the entries without owners as a plain dict, kept in step with the
    cache, for the lookups of hot paths (one C-level `dict.get`). A hit there does not
    refresh the entry's recency: entries found only through it age by insertion.
    """

    def __init__(self, name: str, *, max_entries: int, max_bytes: int):
        self.name = name
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._data: collections.OrderedDict[Hashable, _Entry] = collections.OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._dead: collections.deque = collections.deque()  # keys whose owner died
        self.front: dict[Hashable, Any] = {}
        _all_caches.add(self)

    def __len__(self) -> int:
        return len(self._data)

    @property
    def nbytes(self) -> int:
        """The estimated size of everything the cache holds."""
        return self._bytes

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The value cached under `key` (marking it recently used), else `default`."""
        if self._dead:
            self._try_purge()
        entry = self._data.get(key)
        if entry is None or (entry.refs and any(ref() is None for ref in entry.refs)):
            return default
        try:
            self._data.move_to_end(key)
        except KeyError:  # evicted by another thread meanwhile: still a valid answer
            pass
        return entry.value

    def put(self, key: Hashable, value: Any, *, nbytes: int = 0,
            owners: Iterable[Any] = ()) -> None:
        """Cache `value`; it is forgotten as soon as one of `owners` dies.

        The key should name the owners by `id()`, never hold them: a key holding
        its owner would keep it alive.
        """
        cache = weakref.ref(self)  # the callback must not keep the cache alive

        def forget(_ref, key=key, dead=self._dead, finalizing=sys.is_finalizing):
            dead.append(key)
            live = cache()
            if live is not None and not finalizing():  # (at exit, keys' modules are gone)
                live._try_purge()

        refs = tuple(weakref.ref(owner, forget) for owner in owners)
        evicted = []
        with self._lock:
            old = self._data.pop(key, None)
            if old is not None:
                self._bytes -= old.nbytes
                evicted.append(old)
            self._data[key] = _Entry(value, nbytes, refs)
            self._bytes += nbytes
            if not refs:
                self.front[key] = value
            while len(self._data) > 1 and (len(self._data) > self.max_entries
                                           or self._bytes > self.max_bytes):
                evicted.append(self._pop_oldest())
            self._purge_locked(evicted)
        del evicted  # values are freed here, outside the lock

    def evict(self, predicate) -> None:
        """Drop every entry whose key satisfies `predicate`."""
        with self._lock:
            dropped = [self._remove(k) for k in [k for k in self._data if predicate(k)]]
        del dropped

    def keys(self) -> list:
        return [k for k, e in list(self._data.items()) if all(r() is not None for r in e.refs)]

    def clear(self) -> None:
        with self._lock:
            dropped = list(self._data.values())
            self._data.clear()
            self.front.clear()
            self._bytes = 0
        del dropped

    def _pop_oldest(self) -> _Entry:
        key, entry = self._data.popitem(last=False)
        self.front.pop(key, None)
        self._bytes -= entry.nbytes
        return entry

    def _remove(self, key: Hashable) -> _Entry | None:
        entry = self._data.pop(key, None)
        self.front.pop(key, None)
        if entry is not None:
            self._bytes -= entry.nbytes
        return entry

    def _purge_locked(self, sink: list) -> None:
        while self._dead:
            key = self._dead.popleft()
            entry = self._data.get(key)
            if entry is not None and any(ref() is None for ref in entry.refs):
                sink.append(self._remove(key))

    def _try_purge(self) -> None:
        """Purge dead entries now unless the lock is busy (then the next call does)."""
        if not self._lock.acquire(blocking=False):
            return
        dropped: list = []
        try:
            self._purge_locked(dropped)
        finally:
            self._lock.release()
        del dropped  # may free more owners; their callbacks purge again


def cache_stats() -> dict[str, tuple[int, int]]:
    """(entries, estimated bytes) of every live bounded cache, by name."""
    return {c.name: (len(c), c.nbytes) for c in list(_all_caches)}


def nbytes_of(values: Iterable[Any]) -> int:
    """The bytes of the arrays among `values` (other values count nothing)."""
    return sum(getattr(v, "nbytes", 0) or 0 for v in values)
