"""Atomic file output: a report or result file is either complete or absent, never partial."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def atomic_path(target: Path) -> Iterator[Path]:
    """Yield a temporary path next to ``target``; on success rename it onto ``target``, on error delete it.

    Parameters
    ----------
    target : Path
        Final file path; its folder must exist.
    """
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o666 & ~_umask())  # mkstemp makes 0600; give the file the usual permissions
        os.replace(tmp_path, target)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def ensure_writable_dir(folder: Path) -> list[Path]:
    """Create ``folder`` if needed and check a file can be written there, before any long computation.

    Returns
    -------
    list[Path]
        The folders this call created (deepest last), so a failed run can remove them again.

    Raises
    ------
    OSError
        With the folder named, when it cannot be created or written.
    """
    created = [p for p in (folder, *folder.parents) if not p.exists()][::-1]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-test.", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        msg = f"cannot write to output folder {folder}: {exc.strerror or exc}"
        raise OSError(msg) from None
    return created


def remove_if_empty(folders: list[Path]) -> None:
    """Remove the given folders, deepest first, where they are empty (cleanup after a failed run)."""
    for p in reversed(folders):
        with contextlib.suppress(OSError):
            p.rmdir()


def write_text_atomic(target: Path, text: str) -> None:
    """Write ``text`` to ``target`` atomically."""
    with atomic_path(target) as tmp:
        tmp.write_text(text)


def _json_default(obj: Any) -> Any:
    """Turn numpy scalars and arrays (and anything with ``tolist``/``item``) into plain JSON values."""
    if hasattr(obj, "tolist"):
        return obj.tolist()
    if hasattr(obj, "item"):
        return obj.item()
    msg = f"cannot encode {type(obj).__name__} value {obj!r} as JSON"
    raise TypeError(msg)


def canonical_json(obj: Any) -> str:
    """Return the canonical JSON text of ``obj``: sorted keys, no spaces, numpy values as plain numbers.

    Raises
    ------
    TypeError
        When a value cannot be encoded (the message names its type).
    """
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_json_default)
