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

from chipdse.core.errors import MAX_SHOWN_CHARS, SpecError, shorten

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
    source : str
        Where it came from, the ``source`` of the errors it causes: ``--set`` (the command line) or ``overrides``
        (the ``overrides=`` mapping of :func:`chipdse.load_scenario`).
    """

    path: str
    value: Any
    text: str
    source: str = SOURCE

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


PY_SOURCE = "overrides"
"""The ``source`` of the errors an override from a Python mapping causes (:func:`overrides_from_mapping`)."""


def overrides_from_mapping(mapping: Mapping[str, Any] | None, source: str = PY_SOURCE) -> tuple[Override, ...]:
    """The ``overrides=`` mapping of :func:`chipdse.load_scenario` as overrides, checked like ``--set`` options.

    Parameters
    ----------
    mapping : mapping of str to any, optional
        ``{dotted path: value}``, the paths of ``--set`` (``design_space.d2d_GBps``, ``library.compute.Ap.area_mm2``);
        a value is what the file would hold there (a number, a word, a list, or a mapping).
    source : str
        The ``source`` the errors name (default ``overrides``).

    Returns
    -------
    tuple of Override
        In the mapping's order; each ``text`` is ``PATH=VALUE`` with the value in YAML flow style.

    Raises
    ------
    SpecError
        Source ``overrides``: a mapping that is not one, a key that is not a dotted path, or a value of None.
    """
    if mapping is None:
        return ()
    if not isinstance(mapping, Mapping):
        raise SpecError(source, shorten(mapping), "a mapping of dotted paths to values, e.g. "
                        "{'design_space.d2d_GBps': [256, 512]}")
    out: list[Override] = []
    for path, value in mapping.items():
        text = f"{path}={_flow(value)}"
        text = text if len(text) <= MAX_SHOWN_CHARS else text[:MAX_SHOWN_CHARS] + "..."
        if not isinstance(path, str) or not _segments(path.strip()):
            raise SpecError(source, text, "a dotted path of field names, e.g. library.compute.Ap.utilization")
        if value is None:
            raise SpecError(source, text, "a value: a number, a word, a list or a mapping")
        out.append(Override(path.strip(), copy.deepcopy(value), text, source))
    return tuple(out)


def _flow(value: Any) -> str:
    """``value`` in one line of YAML flow style, for messages (``[256, 512]``, ``{a: 1}``, ``0.5``)."""
    try:
        return yaml.safe_dump(value, default_flow_style=True, width=10**6).strip().removesuffix("...").strip()
    except yaml.YAMLError:
        return repr(value)


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
                raise SpecError(ov.source, ov.text, f"a path through mappings and lists; {where} is "
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
            raise SpecError(ov.source, ov.text, f"a list position below {len(node)}, got [{seg}]")
        return seg
    names = [e.get("name") for e in node if isinstance(e, dict)]
    if seg in names:
        return names.index(seg)
    known = ", ".join(str(n) for n in names if n is not None) or "none: give a position [i]"
    raise SpecError(ov.source, ov.text, f"an entry of the list by name ({known}) or by position [i], got {seg!r}")


def caused_by(overrides: Sequence[Override], target: str, exc: SpecError) -> SpecError:
    """Re-state a validation error of a file that ``overrides`` changed as the ``--set`` that caused it.

    Returns ``exc`` unchanged when no override reaches ``target``; otherwise a SpecError with the overrides'
    source (``--set`` or ``overrides``),
    the options as field, and the file's own message (file and field) as what was expected. When the error's
    field lies on the path of some of the overrides (or theirs on its), only those are named.
    """
    mine = [ov for ov in overrides if ov.target == target]
    if not mine:
        return exc
    named = [ov.text for ov in (reaching(mine, exc.field) or mine)]
    where = f"{exc.source}: {exc.field}" if exc.field else exc.source
    return SpecError(mine[0].source, " ".join(named), f"{exc.expected} (as {where})")


def reaching(overrides: Sequence[Override], field: str) -> list[Override]:
    """The overrides whose path lies on the error field's path or it on theirs (``design_space.d2d_GBps`` reaches
    ``design_space.d2d_GBps[0]`` and ``design_space``); none for an empty field."""
    def dotted(path: str) -> str:
        return path.replace("[", ".").replace("]", "")

    flat = dotted(field)
    if not flat:
        return []
    return [ov for ov in overrides if (mine := dotted(ov.inner)) == flat or ov.inner.startswith(flat + ".")
            or flat.startswith(mine + ".")]


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
