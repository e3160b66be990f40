"""``--set PATH=VALUE``: change one scenario or register value by its dotted path before the files are validated.

A path starts with the scenario's own fields (``simulation.static_batch_timeout_s``, ``energy.table.hbm3_read``,
``thermal.stack.tim_conductivity``) or, for a HYDRA scenario, with the file the scenario names: ``library.``
(``library.compute.Ap.utilization``: a list entry by its ``name`` or by position, ``library.compute[0]``),
``package.`` or ``workload.``. The names are the ``name`` column of ``chipdse params``. A value is read as YAML
(``0.5``, ``[256, 512]``, ``true``, ``static``), then the changed file is validated as if it had been written
that way, so a bad path or value fails with the file's own message, naming the ``--set`` that caused it.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import yaml

from chipdse.core.errors import SpecError, shorten

SOURCE = "--set"
"""The ``source`` of every SpecError an override causes (the CLI prints ``--set: PATH=VALUE: ...``)."""

FILE_PREFIXES = ("library", "package", "workload")
"""First path segments that reach into a file a HYDRA scenario names, not the scenario itself."""

T = TypeVar("T")

_SEGMENT = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


@dataclass(frozen=True)
class Override:
    """One ``--set PATH=VALUE``.

    Attributes
    ----------
    path : str
        The dotted path as given (``library.compute.Ap.utilization``).
    value : Any
        The value, read as YAML.
    text : str
        The option as typed, for messages.
    """

    path: str
    value: Any
    text: str

    @property
    def target(self) -> str:
        """``"scenario"`` or the file prefix the path reaches into (:data:`FILE_PREFIXES`)."""
        head = self.path.split(".", 1)[0].split("[", 1)[0]
        return head if head in FILE_PREFIXES and "." in self.path else "scenario"

    @property
    def inner(self) -> str:
        """The path inside its target file (the prefix stripped for a library / package / workload path)."""
        return self.path if self.target == "scenario" else self.path.split(".", 1)[1]


def parse_overrides(items: Sequence[str] | None) -> tuple[Override, ...]:
    """Parse ``--set`` options.

    Parameters
    ----------
    items : sequence of str
        Each ``PATH=VALUE``: PATH dotted (list entries by ``[i]`` or, for a list of named entries, by name),
        VALUE one YAML scalar or flow list.

    Returns
    -------
    tuple of Override
        In the order given (a later one on the same path wins).

    Raises
    ------
    SpecError
        Source ``--set``: no ``=``, an empty or malformed path, or a value that is not valid YAML.
    """
    out: list[Override] = []
    for text in items or ():
        path, eq, raw = text.partition("=")
        path = path.strip()
        if not eq or not path:
            raise SpecError(SOURCE, shorten(text), "PATH=VALUE, e.g. --set simulation.static_batch_timeout_s=0.5")
        if not _segments(path):
            raise SpecError(SOURCE, shorten(text), "a dotted path of field names, e.g. library.compute.Ap.utilization")
        try:
            value = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError:
            raise SpecError(SOURCE, shorten(text), "a value YAML can read (a number, a word, or [a, b])") from None
        if value is None or isinstance(value, dict):
            raise SpecError(SOURCE, shorten(text), "a value after '=': a number, a word or a [list]")
        out.append(Override(path, value, text))
    return tuple(out)


def _segments(path: str) -> list[str | int] | None:
    """``a.b[2].c`` -> ``["a", "b", 2, "c"]``; None when the path has characters outside names and ``[i]``."""
    pos, out = 0, []
    for part in path.split("."):
        if not part:
            return None
        pos = 0
        while pos < len(part):
            m = _SEGMENT.match(part, pos)
            if m is None:
                return None
            out.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
            pos = m.end()
    return out


def apply_overrides(data: Mapping[str, Any], overrides: Sequence[Override], target: str = "scenario",
                    ) -> dict[str, Any]:
    """Return a deep copy of one file's mapping with the overrides of ``target`` set.

    Parameters
    ----------
    data : mapping
        The file as read (:func:`chipdse.core.specs.read_yaml`).
    overrides : sequence of Override
        All the run's overrides; only those whose :attr:`Override.target` is ``target`` apply.
    target : str
        ``"scenario"`` or one of :data:`FILE_PREFIXES`.

    Returns
    -------
    dict
        The mapping to validate. A missing mapping on the way is created (the validator then names an unknown
        field); a list entry is found by position or by its ``name``.

    Raises
    ------
    SpecError
        Source ``--set``: a path through a value that is not a mapping or a list, a list position out of range, or
        a name no entry of the list has.
    """
    out: dict[str, Any] = copy.deepcopy(dict(data))
    for ov in overrides:
        if ov.target != target:
            continue
        segs = _segments(ov.inner) or []
        node: Any = out
        for i, seg in enumerate(segs):
            last = i == len(segs) - 1
            if isinstance(node, list):
                idx = _list_index(node, seg, ov)
                if last:
                    node[idx] = ov.value
                else:
                    node = node[idx]
                continue
            if not isinstance(node, dict) or isinstance(seg, int):
                where = ".".join(str(s) for s in segs[:i]) or ov.inner
                raise SpecError(SOURCE, ov.text, f"a path through mappings and lists; {where} is "
                                f"{shorten(node)}")
            if last:
                node[seg] = ov.value
            else:
                node = node.setdefault(seg, {})
    return out


def _list_index(node: list[Any], seg: str | int, ov: Override) -> int:
    """Position of ``seg`` in a list: an index, or the entry whose ``name`` is ``seg``."""
    if isinstance(seg, int):
        if seg >= len(node):
            raise SpecError(SOURCE, ov.text, f"a list position below {len(node)}, got [{seg}]")
        return seg
    names = [e.get("name") for e in node if isinstance(e, dict)]
    if seg in names:
        return names.index(seg)
    known = ", ".join(str(n) for n in names if n is not None) or "none: give a position [i]"
    raise SpecError(SOURCE, ov.text, f"an entry of the list by name ({known}) or by position [i], got {seg!r}")


def caused_by(overrides: Sequence[Override], target: str, exc: SpecError) -> SpecError:
    """Re-state a validation error of a file that ``overrides`` changed as the ``--set`` that caused it.

    Returns ``exc`` unchanged when no override reaches ``target``; otherwise a SpecError with source ``--set``,
    the options as field, and the file's own message (file and field) as what was expected. When the error's
    field lies on the path of some of the overrides (or theirs on its), only those are named.
    """
    mine = [ov for ov in overrides if ov.target == target]
    if not mine:
        return exc
    field = exc.field.replace("[", ".").replace("]", "")
    hit = [ov for ov in mine if field and (ov.inner == field or ov.inner.startswith(field + ".")
                                           or field.startswith(ov.inner + "."))]
    named = [ov.text for ov in (hit or mine)]
    where = f"{exc.source}: {exc.field}" if exc.field else exc.source
    return SpecError(SOURCE, " ".join(named), f"{exc.expected} (as {where})")


def as_record(overrides: Sequence[Override]) -> dict[str, Any]:
    """The overrides as ``{path: value}`` (the manifest's ``overrides`` and part of the store's key)."""
    return {ov.path: ov.value for ov in overrides}


def validated(data: Mapping[str, Any], overrides: Sequence[Override], target: str,
                 validate: Callable[[dict[str, Any]], T]) -> T:
    """Validate one file's mapping with the overrides of ``target`` set (:func:`apply_overrides`).

    Raises
    ------
    SpecError
        The file's own error when the file is bad without the overrides too; otherwise the error re-stated as the
        ``--set`` options that caused it (:func:`caused_by`).
    """
    changed = apply_overrides(data, overrides, target)
    try:
        return validate(changed)
    except SpecError as exc:
        if changed == dict(data):
            raise
        validate(dict(data))  # raises the file's own error when the file is bad anyway
        raise caused_by(overrides, target, exc) from None
