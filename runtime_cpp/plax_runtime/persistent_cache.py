"""The persistent compilation cache: compiled executables kept on disk across processes.

`executable.compile` asks `lookup` before compiling a module and hands what it
compiled to `store`. The options are read on every compile, so changing them takes
effect at the next compile: `jax_compilation_cache_dir` (or `set_cache_dir`) names
the directory, `jax_enable_compilation_cache` turns the cache off,
`jax_persistent_cache_min_compile_time_secs` and
`jax_persistent_cache_min_entry_size_bytes` keep quick or small compiles out, and
`jax_compilation_cache_max_size` bounds the directory (least recently used entries
are deleted after a write).

An entry's key hashes everything the compiled code depends on: the module
(without its source locations, unless `jax_compilation_cache_include_metadata_in_key`
asks for them, so moving code does not miss), the serialized `CompileOptions`
(device assignment, build options, XLA option overrides), the devices and their
topology (on CPU: the host's instruction set), the backend's platform and platform
version, the jaxlib version and the `XLA_FLAGS` environment. Its value is the
executable as `LoadedExecutable.serialize` writes it, zlib-compressed behind a
header with the compile time, the executable's digest, a digest of the entry's key
and the versions that wrote it (jaxlib, plax, the backend's platform version). A file
whose header names another key or other versions (renamed, copied or swapped by
hand, or by a tool) is a miss, warned about, and compiled again: the cache never runs
an executable under a key it was not compiled for.
Entries are written to a temporary file and renamed, so readers never see half an
entry; an entry that cannot be read back (truncated, corrupted, from another build)
is reported with one warning, compiled again and overwritten. Modules with Python
host callbacks are never cached: their callbacks cannot be saved. In a run of
several processes only process 0 writes; all of them read.

The cache is trusted: loading an executable may run its code, so never point it at
a directory others can write.
"""
from __future__ import annotations

import functools
import hashlib
import io
import logging
import os
import platform
import re
import struct
import tempfile
import threading
import time
import warnings
import zlib
from collections.abc import Sequence

from jaxlib import version as jaxlib_version, xla_client as xc

from plax import monitoring, version as plax_version
from plax.extend import config
from plax.extend.mlir import make_ir_context

logger = logging.getLogger(__name__)

_MAGIC = b"PLAXEXE2"
# magic, compile seconds, sha256 of the executable, sha256 of the key, length of the
# versions string that follows the header
_HEADER = struct.Struct(">8sd32s32sH")
_SUFFIX = "-cache"

_lock = threading.Lock()
_stats = {"hits": 0, "misses": 0, "writes": 0, "not_written": 0, "errors": 0}
_warned: set[str] = set()  # the kinds of problem already warned about
_unsupported_platforms: set[str] = set()  # backends that cannot serialize executables
_task_recorded = False


class CacheReadError(RuntimeError):
    """A cache entry exists but cannot be turned back into an executable."""


class CacheMismatchError(CacheReadError):
    """A cache entry is intact but was written for another key or other versions."""


def set_cache_dir(path: str | os.PathLike | None) -> None:
    """Keeps compiled executables in `path` from now on (None turns the cache off)."""
    config.config.update("jax_compilation_cache_dir", None if path is None else os.fspath(path))


def reset_cache() -> None:
    """Forgets this process's cache state (counters, warnings given, backends found
    unable to serialize); the directory and its entries are left as they are."""
    global _task_recorded
    with _lock:
        for name in _stats:
            _stats[name] = 0
        _warned.clear()
        _unsupported_platforms.clear()
        _task_recorded = False


def is_initialized() -> bool:
    """Whether the cache is enabled (`jax_enable_compilation_cache`), as JAX's
    deprecated spelling answers; a directory must also be set for it to be used."""
    return bool(config.enable_compilation_cache.value)


def stats() -> dict[str, int]:
    """This process's counts: `hits` (executables loaded from disk), `misses` (keys
    not found), `writes`, `not_written` (below a threshold or uncacheable) and
    `errors` (entries that could not be read or written)."""
    with _lock:
        return dict(_stats)


def directory(client: xc.Client) -> str | None:
    """The cache directory to use for compiles on `client`, or None when the cache is
    off (no directory, disabled, or a backend that cannot serialize executables)."""
    path = config.compilation_cache_dir.value
    if not path or not config.enable_compilation_cache.value:
        return None
    if client.platform in _unsupported_platforms:
        return None
    _record_task_once()
    return path


def cache_key(payload: str | bytes, devices: Sequence[xc.Device], options: xc.CompileOptions,
              client: xc.Client, name: str) -> str:
    """The entry name for compiling `payload` with `options` on `devices`: the module
    name (readable) and a SHA-256 of everything the executable depends on."""
    digest = hashlib.sha256()
    parts = (
        _MAGIC,
        *_module_for_key(payload),
        options.SerializeAsString(),
        repr([(d.id, d.platform, d.device_kind, d.process_index) for d in devices]).encode(),
        _topology(devices),
        _host_cpu() if client.platform == "cpu" else b"",
        client.platform.encode(),
        client.platform_version.encode(),
        jaxlib_version.__version__.encode(),
        os.environ.get("XLA_FLAGS", "").encode(),
    )
    for part in parts:  # length-prefixed, so no two different inputs run together
        digest.update(len(part).to_bytes(8, "big"))
        digest.update(part)
    readable = re.sub(r"[^A-Za-z0-9_.]+", "_", name).strip("_")[:64] or "module"
    return f"{readable}-{digest.hexdigest()}"


def _topology(devices: Sequence[xc.Device]) -> bytes:
    """The fingerprint of the devices' topology, where the backend can give one."""
    try:
        return xc.get_topology_for_devices(list(devices)).fingerprint().to_bytes(8, "big")
    except Exception:  # noqa: BLE001 - backends without topologies: the devices say enough
        return b""


@functools.cache
def _host_cpu() -> bytes:
    """What a CPU executable was compiled for: the machine and its instruction set
    extensions (code built for AVX-512 must not be loaded where there is none)."""
    features = b""
    try:
        with open("/proc/cpuinfo", "rb") as f:
            for line in f:
                if line.startswith((b"flags", b"Features")):
                    features = line
                    break
    except OSError:
        pass
    return platform.machine().encode() + b"\0" + features


def _module_for_key(payload: str | bytes) -> tuple[bytes, bytes]:
    """(what identifies the module, how): its bytecode without debug information, or
    the payload as given with metadata asked for (or if it does not parse)."""
    if not config.compilation_cache_include_metadata_in_key.value:
        from jaxlib.mlir import ir, passmanager  # only once the cache is in use
        try:
            with make_ir_context():
                module = ir.Module.parse(payload)
                passmanager.PassManager.parse("builtin.module(strip-debuginfo)").run(
                    module.operation)
                out = io.BytesIO()
                module.operation.write_bytecode(file=out)
                return out.getvalue(), b"stripped bytecode"
        except ir.MLIRError as e:
            logger.debug("persistent cache key: the module does not parse (%s); its "
                         "source locations are part of the key", e)
    raw = payload.encode() if isinstance(payload, str) else payload
    return raw, b"text" if isinstance(payload, str) else b"bytecode"


def contains(path: str, key: str) -> bool:
    """Whether an entry is stored under `key` (read or not)."""
    return os.path.exists(os.path.join(path, key + _SUFFIX))


def lookup(path: str, key: str, client: xc.Client, devices: Sequence[xc.Device],
           options: xc.CompileOptions, name: str) -> xc.LoadedExecutable | None:
    """The executable stored under `key` loaded onto `devices`, or None (missing, or
    unreadable: then warned about once and left to be overwritten)."""
    monitoring.record_event("/jax/compilation_cache/compile_requests_use_cache")
    start = time.monotonic()
    file = os.path.join(path, key + _SUFFIX)
    try:
        with open(file, "rb") as f:
            entry = f.read()
    except FileNotFoundError:
        _count("misses")
        _log_miss(name, key)
        return None
    except OSError as e:
        _problem("read", f"cannot read persistent compilation cache entry {file}: {e}")
        return None
    try:
        serialized, compile_secs = _decode(entry, key, _versions(client))
        loaded = client.deserialize_executable(serialized, xc.DeviceList(tuple(devices)),
                                               options)
    except CacheMismatchError as e:
        _problem("mismatch", f"persistent compilation cache entry {file} for '{name}' "
                             f"{e}; it is not used (a miss) and will be rebuilt",
                 counter="misses")
        return None
    except Exception as e:  # noqa: BLE001 - any unreadable entry means: compile again
        _problem("read", f"persistent compilation cache entry for '{name}' ({file}) cannot "
                         f"be used and will be rebuilt: {type(e).__name__}: {e}")
        return None
    _touch(file)
    _count("hits")
    retrieval = time.monotonic() - start
    level = logging.WARNING if config.log_compiles.value else logging.DEBUG
    logger.log(level, "Persistent compilation cache hit for '%s' with key %r", name, key)
    monitoring.record_event("/jax/compilation_cache/cache_hits")
    monitoring.record_event_duration_secs("/jax/compilation_cache/compile_time_saved_sec",
                                          compile_secs - retrieval)
    monitoring.record_event_duration_secs("/jax/compilation_cache/cache_retrieval_time_sec",
                                          retrieval)
    return loaded


def store(path: str, key: str, loaded: xc.LoadedExecutable, client: xc.Client,
          compile_secs: float, name: str) -> None:
    """Writes `loaded` under `key` unless a threshold keeps it out. Only process 0 of
    a multi-process run writes (the others would write the same entries at once)."""
    if client.process_index() != 0:
        _not_written(f"Not writing persistent cache entry for '{name}' since this is "
                     f"process {client.process_index()}, not 0")
        return
    min_secs = config.persistent_cache_min_compile_time_secs.value
    if compile_secs < min_secs:
        _not_written(f"Not writing persistent cache entry for '{name}' because it took "
                     f"< {min_secs:.2f} seconds to compile ({compile_secs:.2f}s)")
        return
    max_size = config.compilation_cache_max_size.value
    if max_size == 0:
        _not_written(f"Not writing persistent cache entry for '{name}': "
                     "jax_compilation_cache_max_size is 0")
        return
    try:
        serialized = loaded.serialize()
    except Exception as e:  # noqa: BLE001 - a backend without serialization
        with _lock:
            _unsupported_platforms.add(client.platform)
        _problem("serialize", f"the {client.platform} backend cannot serialize executables "
                              f"({type(e).__name__}: {e}); the persistent compilation cache "
                              "is off for it")
        return
    entry = _encode(serialized, compile_secs, key, _versions(client))
    min_size = config.persistent_cache_min_entry_size_bytes.value
    if len(entry) < min_size:
        _not_written(f"Not writing persistent cache entry for '{name}' since its size "
                     f"({len(entry)} bytes) is less than threshold ({min_size} bytes)")
        return
    try:
        os.makedirs(path, exist_ok=True)
        _write_atomically(os.path.join(path, key + _SUFFIX), entry)
        if max_size > 0:
            _evict(path, max_size)
    except OSError as e:
        _problem("write", f"cannot write persistent compilation cache entry for '{name}' "
                          f"in {path}: {e}")
        return
    _count("writes")
    level = logging.WARNING if _explaining() else logging.DEBUG
    logger.log(level, "Writing %s to persistent compilation cache with key %r", name, key)
    monitoring.record_event("/jax/compilation_cache/cache_misses")


def skip(name: str, why: str) -> None:
    """Notes that a compile with the cache on does not use it (host callbacks...)."""
    _not_written(f"Not using the persistent compilation cache for '{name}' because {why}")


def _versions(client: xc.Client) -> bytes:
    """What wrote an entry, besides its key: jaxlib, plax and the backend's version."""
    return (f"jaxlib {jaxlib_version.__version__}; plax {plax_version.__version__}; "
            f"{client.platform} {client.platform_version}").encode()


def _encode(serialized: bytes, compile_secs: float, key: str, versions: bytes) -> bytes:
    header = _HEADER.pack(_MAGIC, compile_secs, hashlib.sha256(serialized).digest(),
                          hashlib.sha256(key.encode()).digest(), len(versions))
    return header + versions + zlib.compress(serialized)


def _decode(entry: bytes, key: str, versions: bytes) -> tuple[bytes, float]:
    """(serialized executable, compile seconds) of an entry read under `key`;
    CacheMismatchError if its header names another key or other versions,
    CacheReadError if it is not one this format wrote or its contents do not match
    their digest."""
    if len(entry) < _HEADER.size:
        raise CacheReadError(f"entry of {len(entry)} bytes is shorter than its header")
    magic, compile_secs, digest, key_digest, n_versions = _HEADER.unpack_from(entry)
    if magic != _MAGIC:
        raise CacheReadError(f"entry starts with {magic!r}, not {_MAGIC!r}")
    written_by = entry[_HEADER.size:_HEADER.size + n_versions]
    if key_digest != hashlib.sha256(key.encode()).digest():
        raise CacheMismatchError("holds the executable of another key (the file was "
                                 "renamed, copied or swapped)")
    if written_by != versions:
        raise CacheMismatchError(f"was written by {written_by.decode(errors='replace')!r}, "
                                 f"not {versions.decode()!r}")
    try:
        serialized = zlib.decompress(entry[_HEADER.size + n_versions:])
    except zlib.error as e:
        raise CacheReadError(f"entry does not decompress: {e}") from None
    if hashlib.sha256(serialized).digest() != digest:
        raise CacheReadError("entry does not match its digest")
    return serialized, compile_secs


def _write_atomically(file: str, data: bytes) -> None:
    directory_ = os.path.dirname(file)
    fd, temporary = tempfile.mkstemp(dir=directory_, prefix=".tmp-", suffix=_SUFFIX)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(temporary, file)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def _touch(file: str) -> None:
    """Marks an entry as just used (its modification time orders the evictions)."""
    try:
        os.utime(file)
    except OSError:
        pass


def _evict(path: str, max_size: int) -> None:
    """Deletes the least recently used entries until the entries total `max_size`."""
    entries = []
    for entry in os.scandir(path):
        if entry.name.endswith(_SUFFIX) and not entry.name.startswith(".tmp-"):
            try:
                info = entry.stat()
            except FileNotFoundError:  # removed by another process meanwhile
                continue
            entries.append((info.st_mtime_ns, info.st_size, entry.path))
    total = sum(size for _, size, _ in entries)
    for _, size, file in sorted(entries):
        if total <= max_size:
            break
        try:
            os.unlink(file)
        except FileNotFoundError:
            pass
        total -= size
        logger.debug("Evicted %s from the persistent compilation cache", file)


def _explaining() -> bool:
    return bool(config.explain_cache_misses.value)


def _log_miss(name: str, key: str) -> None:
    level = logging.WARNING if _explaining() else logging.DEBUG
    logger.log(level, "PERSISTENT COMPILATION CACHE MISS for '%s' with key %r", name, key)


def _not_written(message: str) -> None:
    _count("not_written")
    logger.log(logging.WARNING if _explaining() else logging.DEBUG, message)


def _problem(kind: str, message: str, counter: str = "errors") -> None:
    """An entry could not be read or written (or was another key's: a miss): raise if
    asked to, else warn (once per kind of problem) and carry on compiling."""
    _count(counter)
    if config.raise_persistent_cache_errors.value:
        raise RuntimeError(message)
    with _lock:
        first = kind not in _warned
        _warned.add(kind)
    if first:
        warnings.warn(message, RuntimeWarning, stacklevel=4)
    else:
        logger.debug(message)


def _count(name: str) -> None:
    with _lock:
        _stats[name] += 1


def _record_task_once() -> None:
    global _task_recorded
    if not _task_recorded:
        _task_recorded = True
        monitoring.record_event("/jax/compilation_cache/tasks_using_cache")
