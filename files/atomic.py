"""One way to write a file whole or not at all: into a temporary file beside it, then one rename.

A results file, a cache entry, an assembled model and a batch's output are all read by something
else (a page, the next run, another process starting the same model) that must find either the old
file or the new one, never a half-written one. The temporary file is in the target's own folder, so
that the rename stays on one file system and is atomic; on any failure it is removed.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO


@contextmanager
def atomic_write(
    path: Path,
    *,
    durable: bool = False,
    mode: int | None = None,
    before_replace: Callable[[], None] | None = None,
) -> Iterator[BinaryIO]:
    """A binary file that becomes `path` when the block ends without an exception.

    `durable` syncs the data to disk before the rename (for what a crash of the machine must not lose);
    `mode` sets the permissions (otherwise the umask's, as for any new file); `before_replace` runs
    just before the rename.
    """
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    try:
        with open(temporary, "xb") as handle:
            yield handle
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        if before_replace is not None:
            before_replace()
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def write_bytes_atomic(path: Path, data: bytes, *, mode: int | None = None) -> None:
    """`path` holds `data`, whole, or keeps what it held before."""
    with atomic_write(path, mode=mode) as handle:
        handle.write(data)
