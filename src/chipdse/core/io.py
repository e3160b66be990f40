"""Safe input reading and atomic file output: every input file is read through :func:`read_input_text` (a
regular, readable, bounded UTF-8 file, or one ``SpecError`` line naming it); a report or result file is either
complete or absent, never partial."""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from chipdse.core.errors import ChipdseError, SpecError, shorten

MAX_INPUT_BYTES = 64 * 2**20
"""Largest input file read, bytes (64 MiB): the largest bundled input, a 1M-row trace, is about 15 MB; a bigger
file is a mistake (or ``/dev/zero``) and would only fill memory."""

MAX_SHOWN_PATH = 4096
"""Longest input path a message repeats whole (the system's own limit); a longer one is cut."""


def input_kind_error(path: Path) -> str | None:
    """Why ``path`` cannot be read as an input file, or None when it is a regular file of at most
    :data:`MAX_INPUT_BYTES` bytes (symbolic links followed). Nothing is opened, so a FIFO or device never blocks.

    Returns
    -------
    str | None
        E.g. ``"file not found"``, ``"a file, got a directory"``, ``"a regular file, got a FIFO"``.
    """
    try:
        st = path.stat()
    except FileNotFoundError:
        return "file not found"
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            return "a path the system accepts (file name too long)"
        if isinstance(exc, PermissionError):
            return "a readable file (permission denied on its folder)"
        return f"a readable file ({exc.strerror or exc})"
    if stat.S_ISDIR(st.st_mode):
        return "a file, got a directory (is a directory)"
    if not stat.S_ISREG(st.st_mode):
        what = ("a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device" if stat.S_ISCHR(st.st_mode) or
                stat.S_ISBLK(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "a special file")
        return f"a regular file, got {what} (not a regular file)"
    if st.st_size > MAX_INPUT_BYTES:
        return (f"a file of at most {MAX_INPUT_BYTES // 2**20} MB (inputs are read whole into memory), got "
                f"{st.st_size / 2**20:,.0f} MB")
    return None


def read_input_text(path: Path, what: str = "text") -> str:
    """Read an input file (scenario, spec YAML, model card, trace, QAPLIB instance) as UTF-8 text.

    Parameters
    ----------
    path : Path
        The file; symbolic links are followed.
    what : str
        What the file should hold, for messages (e.g. ``"YAML"``, ``"CSV"``).

    Returns
    -------
    str
        The whole text.

    Raises
    ------
    SpecError
        One line naming ``path``: missing, a directory, not a regular file (FIFO, device, socket), larger than
        :data:`MAX_INPUT_BYTES`, unreadable (permission denied), a path too long, or not UTF-8 (with the line and
        column of the first bad byte).
    """
    problem = input_kind_error(path)
    if problem is not None:
        raise SpecError(str(path) if len(str(path)) <= MAX_SHOWN_PATH else shorten(str(path)), "", problem)
    try:
        with path.open("rb") as f:
            data = f.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        reason = "permission denied" if isinstance(exc, PermissionError) else exc.strerror or str(exc)
        raise SpecError(str(path), "", f"a readable {what} file ({reason})") from None
    if len(data) > MAX_INPUT_BYTES:
        raise SpecError(str(path), "", f"a file of at most {MAX_INPUT_BYTES // 2**20} MB (it grew while read)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        msg = (f"a UTF-8 {what} file, got byte 0x{data[exc.start]:02x} at line {line}, column {column} (binary "
               "data or another encoding, not UTF-8 text)")
        raise SpecError(str(path), "", msg) from None


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


def ensure_writable_dir(folder: Path, option: str = "output folder") -> list[Path]:
    """Create ``folder`` if needed and check a file can be written there, before any long computation.

    ``option`` names where the folder came from in the error (e.g. ``"--out"``, ``"--csv"``).

    Returns
    -------
    list[Path]
        The folders this call created (deepest last), so a failed run can remove them again.

    Raises
    ------
    ChipdseError
        ``"OPTION: cannot write to output folder FOLDER: reason"``, when it cannot be created or written.
    """
    created = [p for p in (folder, *folder.parents) if not p.exists()][::-1]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".write-test.", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        msg = f"{option}: cannot write to output folder {folder}: {exc.strerror or exc}"
        raise ChipdseError(msg) from None
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


def strict_json(obj: Any) -> Any:
    """``obj`` with every NaN float replaced by None, recursively through dicts, lists and tuples (strict JSON)."""
    if isinstance(obj, dict):
        return {k: strict_json(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [strict_json(v) for v in obj]
    if isinstance(obj, float) and math.isnan(obj):
        return None
    return obj
