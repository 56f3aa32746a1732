"""This CPU, and what a llama.cpp binary needs of it: which instruction families a binary's code uses,
which of them this CPU lacks, and a crash's exit status in words.

A binary that dies of an illegal instruction while loading a model says only its signal; naming the
instructions it needs and this CPU lacks tells a user which runtime to choose instead.
"""

from __future__ import annotations

import functools
import hashlib
import shutil
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

_CRASH_SIGNALS: Final = frozenset(
    {signal.SIGILL, signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGABRT}
)


@functools.cache
def cpu_flags() -> frozenset[str]:
    """The instruction-set flags of this CPU (``/proc/cpuinfo``); empty where that file does not exist."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return frozenset()
    for line in text.splitlines():
        if line.startswith("flags"):
            return frozenset(line.split(":", 1)[1].split())
    return frozenset()


def cpu_fingerprint() -> str:
    """A stable hash of this CPU's flags: verdicts and host builds are only valid on the same kind of CPU."""
    return hashlib.sha256(" ".join(sorted(cpu_flags())).encode()).hexdigest()


@dataclass(frozen=True)
class InstructionFamily:
    """Instructions a binary may contain, named as a user knows them, and the CPU flags they need."""

    name: str
    needs: frozenset[str]
    matches: Callable[[str, str], bool]
    """(mnemonic, operands) -> whether this instruction belongs to the family."""


INSTRUCTION_FAMILIES: Final = (
    InstructionFamily(
        "AMX", frozenset({"amx_tile"}), lambda op, _: op.startswith(("tdp", "tile")) or op.endswith("tilecfg")
    ),
    InstructionFamily(
        "AVX-512 BF16", frozenset({"avx512_bf16"}), lambda op, _: op in {"vdpbf16ps", "vcvtne2ps2bf16"}
    ),
    InstructionFamily(
        "AVX-512 VNNI",
        frozenset({"avx512_vnni"}),
        lambda op, args: op.startswith("vpdpbusd") and "zmm" in args,
    ),
    InstructionFamily(
        "AVX-VNNI",
        frozenset({"avx_vnni"}),
        lambda op, args: (
            op.startswith("{vex}") or (op.startswith("vpdpbusd") and "zmm" not in args and "{" not in args)
        ),
    ),
    InstructionFamily("AVX-512", frozenset({"avx512f"}), lambda _, args: "zmm" in args),
    InstructionFamily("AVX2", frozenset({"avx2"}), lambda op, args: "ymm" in args and op.startswith("vp")),
    InstructionFamily("FMA", frozenset({"fma"}), lambda op, _: op.startswith("vfmadd")),
)


def _code_files(binary: Path) -> list[Path]:
    """The binary and the ggml CPU libraries beside it: where a build's CPU kernels live."""
    files = [binary]
    files += sorted(binary.parent.glob("libggml-cpu*.so*"))[:8]
    files += sorted((binary.parent.parent / "lib").glob("libggml-cpu*.so*"))[:8]
    return list(dict.fromkeys(path.resolve() for path in files if path.is_file()))


def families_used(binary: Path) -> set[str] | None:
    """Instruction families in a binary's CPU code (``objdump -d``), or None where objdump is missing."""
    objdump = shutil.which("objdump")
    if objdump is None:
        return None
    used: set[str] = set()
    for path in _code_files(binary):
        try:
            listing = subprocess.run(
                [objdump, "-d", "--no-show-raw-insn", str(path)],
                capture_output=True, text=True, timeout=120, check=False,
            ).stdout  # fmt: skip
        except (OSError, subprocess.SubprocessError):
            continue
        for line in listing.splitlines():
            parts = line.split("\t")
            if len(parts) < 2:
                continue
            fields = parts[1].split(None, 1)
            if not fields:
                continue
            operation, operands = fields[0], (fields[1] if len(fields) > 1 else "")
            for family in INSTRUCTION_FAMILIES:
                if family.name not in used and family.matches(operation, operands):
                    used.add(family.name)
    return used


def missing_families(binary: Path, flags: frozenset[str] | None = None) -> list[str] | None:
    """Instruction families the binary contains and this CPU lacks; None where that cannot be read."""
    used = families_used(binary)
    if used is None:
        return None
    flags = cpu_flags() if flags is None else flags
    return [
        family.name for family in INSTRUCTION_FAMILIES if family.name in used and not family.needs <= flags
    ]


def crash_reason(returncode: int, binary: Path) -> str | None:
    """Why a process that died while starting crashed, in words; None when it did not die of a signal.

    A process killed by signal N has return code -N; through a shell or ``setpriv`` it may be 128+N.
    """
    signum = -returncode if returncode < 0 else returncode - 128 if 128 < returncode < 160 else None
    if signum is None or signum not in _CRASH_SIGNALS:
        return None
    if signum == signal.SIGILL:
        lacking = missing_families(binary)
        if lacking:
            pronoun = "it" if len(lacking) == 1 else "them"
            return f"illegal instruction: this build needs {', '.join(lacking)}, this CPU lacks {pronoun}"
        return "illegal instruction: this build uses a CPU instruction this CPU lacks"
    return f"crashed with {signal.Signals(signum).name} while loading the model"
