"""The reply cache: DSPy's cache, keyed by where a reply came from, kept where only its user reads it.

DSPy caches every reply under a hash of its request (`dspy.clients.Cache.cache_key`), leaving out the
arguments DSPy's execution lists as not part of it (`IGNORED_CACHE_KEYS`: `api_key`, `api_base`,
`base_url`). Without the endpoint in the key, a run against another server, or against a port where
nothing listens, is answered with the replies the first server gave. `ReplyCache` is DSPy's cache with
one change to its key function: the endpoint stays in the key; the key never does.

- The managed local server listens on a new port each run; `name_endpoint` names its address by the
  model file it serves, so its replies are found again by the next run and never by another model.
- The files live in a folder of edgewise's own (`reply_cache_dir`: `replies/` under
  `$EDGEWISE_CACHE` or ~/.cache/edgewise), made mode 0700, never DSPy's shared ~/.dspy_cache. Each
  SQLite file is created 0600 before SQLite opens it (SQLite gives its -wal and -shm files the mode
  of the database file), and every value is kept inside SQLite (`disk_min_file_size`), never as a
  file of its own that the process umask would leave readable by others.
- Only replies a step could use stay: a reply that could not be parsed, or that stopped at the token
  limit, is removed again (`forget_reply`, through `edgewise.modules.calls`).

The cache is one per process, so only the commands that own their process install it
(`use_reply_cache`: `edgewise extract`, `edgewise serve --shared-cache`, a Ray actor), never a
library call inside someone else's program.
"""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path
from typing import Any, Final

import dspy
from dspy.clients import DISK_CACHE_LIMIT
from dspy.clients.cache import Cache
from dspy.clients.execution import IGNORED_CACHE_KEYS

from edgewise.domain.errors import EdgewiseError
from edgewise.local.local_models import cache_root

#: Replies kept in memory by a process edgewise runs for long; the disk keeps every reply.
MEMORY_CACHE_ENTRIES: Final = 1_000
#: The request arguments that name the server; they stay in the key (`api_key` never does).
ENDPOINT_ARGS: Final = frozenset({"api_base", "base_url"})
_SECRET_ARGS: Final = frozenset({"api_key"})
_SHARDS: Final = 16
_DB_NAME: Final = "cache.db"  # diskcache's name for each shard's SQLite file
_VALUES_IN_SQLITE: Final = 2**62  # diskcache writes a value of at least this many bytes to a file of its own

_ENDPOINT_NAMES: dict[str, str] = {}
_NAMES_LOCK = threading.Lock()


class ReplyCacheError(EdgewiseError, OSError):
    """The reply cache folder cannot be used safely (another user's, a symlink, not a folder)."""


def reply_cache_dir() -> Path:
    """Where the replies are kept: `replies/` in edgewise's cache folder (`$EDGEWISE_CACHE`)."""
    return cache_root() / "replies"


def name_endpoint(api_base: str, name: str) -> None:
    """Key the replies of the server at `api_base` by `name` instead (a managed local server's port
    changes every run; its model file does not)."""
    with _NAMES_LOCK:
        _ENDPOINT_NAMES[api_base] = name


def endpoint_name(api_base: Any) -> Any:
    """The name the cache keys the server at `api_base` by: its own address unless named."""
    return _ENDPOINT_NAMES.get(api_base, api_base) if isinstance(api_base, str) else api_base


class ReplyCache(Cache):
    """DSPy's two-tier cache, whose key holds the endpoint, and whose disk tier is private files."""

    def __init__(self, directory: Path | None, *, memory_entries: int = MEMORY_CACHE_ENTRIES) -> None:
        super().__init__(
            enable_disk_cache=False,
            enable_memory_cache=True,
            disk_cache_dir=None if directory is None else str(directory),
            memory_max_entries=memory_entries,
        )
        if directory is not None:
            self.disk_cache = private_disk_cache(directory)
            self.enable_disk_cache = True

    def cache_key(self, request: dict[str, Any], ignored_args_for_cache_key: list[str] | None = None) -> str:
        """DSPy's key of `request`, with the endpoint (named by `endpoint_name`) kept in and the key left out."""
        ignored = (set(ignored_args_for_cache_key or ()) | _SECRET_ARGS) - ENDPOINT_ARGS
        named = {arg: endpoint_name(request[arg]) for arg in ENDPOINT_ARGS if arg in request}
        return super().cache_key({**request, **named}, sorted(ignored))


def private_folder(path: Path) -> Path:
    """`path` as a folder only this user can enter (0700), created if missing; refused when it is a
    symlink, not a folder, or another user's."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as error:
        raise ReplyCacheError(
            f"{path}: cannot create the reply cache ({error.strerror}); set EDGEWISE_CACHE to a folder of "
            "your own, or run without the cache (--no-cache)"
        ) from None
    info = path.lstat()
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode):
        raise ReplyCacheError(
            f"{path}: the reply cache must be a folder, not a link or a file; move it aside"
        )
    if info.st_uid != os.getuid():
        raise ReplyCacheError(
            f"{path}: the reply cache belongs to another user; set EDGEWISE_CACHE elsewhere"
        )
    os.chmod(path, 0o700)
    return path


def private_disk_cache(directory: Path) -> Any:
    """diskcache's `FanoutCache` as DSPy builds it, in a 0700 folder whose files are all 0600."""
    from diskcache import FanoutCache

    private_folder(directory)
    for shard in range(_SHARDS):
        folder = directory / f"{shard:03d}"
        folder.mkdir(mode=0o700, exist_ok=True)
        os.close(os.open(folder / _DB_NAME, os.O_CREAT | os.O_WRONLY | os.O_NOFOLLOW, 0o600))
    for root, folders, files in os.walk(directory):
        for name in folders:
            os.chmod(Path(root) / name, 0o700, follow_symlinks=False)
        for name in files:
            if not (Path(root) / name).is_symlink():
                os.chmod(Path(root) / name, 0o600)
    return FanoutCache(
        directory=str(directory),
        shards=_SHARDS,
        timeout=10,
        size_limit=DISK_CACHE_LIMIT,
        disk_min_file_size=_VALUES_IN_SQLITE,
    )


def use_reply_cache(
    directory: Path | None = None, *, memory_entries: int = MEMORY_CACHE_ENTRIES
) -> ReplyCache:
    """Make a `ReplyCache` (in `directory`, default `reply_cache_dir()`) DSPy's cache for this process.

    DSPy builds its default cache (~/.dspy_cache) only when `dspy.cache` is first read; setting it
    first means that one is never created.
    """
    cache = ReplyCache(directory or reply_cache_dir(), memory_entries=memory_entries)
    with dspy._cache_lock:  # the lock DSPy's own `configure_cache` and lazy build hold
        dspy.__dict__["cache"] = cache
    return cache


def forget_reply(request: dict[str, Any]) -> None:
    """Remove the reply DSPy cached for `request` (as `PreparedCall.key` gives it) from both tiers."""
    cache = dspy.__dict__.get("cache")  # not `dspy.cache`: reading it would build DSPy's default cache
    if cache is None:
        return
    try:
        key = cache.cache_key(request, IGNORED_CACHE_KEYS)
    except (TypeError, ValueError):  # as in DSPy's get and put: a request it cannot key was never stored
        return
    with cache._lock:
        cache.memory_cache.pop(key, None)
    cache.disk_cache.pop(key, None)
