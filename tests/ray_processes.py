"""The processes of the Ray stage's actors, found through /proc (Linux), for tests and benchmarks that kill one."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final

PROC: Final = Path("/proc")
# The title Ray gives the process of an actor of `map_batches(EpisodeStage, ...)`.
STAGE_TITLE: Final = "ray::MapWorker(MapBatches(EpisodeStage))"


def can_find_actors() -> bool:
    return (PROC / "self" / "cmdline").exists()


def stage_actor_pids() -> list[int]:
    """PIDs of the running stage actors, lowest first."""
    found = []
    for name in os.listdir(PROC):
        if not name.isdigit():
            continue
        try:
            title = (PROC / name / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if title.startswith(STAGE_TITLE):
            found.append(int(name))
    return sorted(found)
