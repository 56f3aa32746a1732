"""The processes of the Ray stage's actors, found through /proc (Linux), for tests and benchmarks that kill one.

Only actors below a given process are found (the Ray a test or a command started is its child), so a
test never touches the actors of another Ray running on the same machine.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

PROC: Final = Path("/proc")
# The title Ray gives the process of an actor of `map_batches(EpisodeStage, ...)`.
STAGE_TITLE: Final = "ray::MapWorker(MapBatches(EpisodeStage))"


def can_find_actors() -> bool:
    return (PROC / "self" / "stat").exists()


def _parent(pid: int) -> int | None:
    try:
        stat = (PROC / str(pid) / "stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state, past the (command)


def _descends_from(pid: int, ancestor: int) -> bool:
    seen = 0
    current: int | None = pid
    while current and seen < 64:
        if current == ancestor:
            return True
        current, seen = _parent(current), seen + 1
    return False


def stage_actor_pids(ancestor: int) -> list[int]:
    """PIDs of the running stage actors below process `ancestor` (the one that started Ray), lowest first."""
    found = []
    for name in os.listdir(PROC):
        if not name.isdigit():
            continue
        try:
            title = (PROC / name / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if title.startswith(STAGE_TITLE) and _descends_from(int(name), ancestor):
            found.append(int(name))
    return sorted(found)


def _socket_inodes(local_port: int) -> set[str]:
    """Inodes of the TCP sockets whose local port is `local_port` (from /proc/net/tcp and tcp6)."""
    inodes = set()
    for table in ("tcp", "tcp6"):
        try:
            rows = (PROC / "net" / table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == local_port:
                inodes.add(fields[9])
    return inodes


def stage_actor_on_port(local_port: int, ancestor: int) -> int | None:
    """The stage actor below `ancestor` whose TCP connection has local port `local_port` (a request's client)."""
    wanted = {f"socket:[{inode}]" for inode in _socket_inodes(local_port)}
    for pid in stage_actor_pids(ancestor):
        try:
            links = {os.readlink(entry) for entry in (PROC / str(pid) / "fd").iterdir()}
        except OSError:
            continue
        if links & wanted:
            return pid
    return None
