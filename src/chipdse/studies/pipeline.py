"""A study as an ordered list of stages over typed artifacts, and the one runner that owns their timings, progress
and checkpoints (STYLE.md item 17, after Stream's stages and their required fields).

A :class:`Stage` names the artifacts it needs and makes (each a typed :class:`Key`) and runs on a
:class:`Context`; :func:`run_stages` runs a list of them in order: it refuses a stage whose inputs no earlier stage
made (naming the stage and the artifact), times each stage (wall and CPU seconds, the CPU of the process pools a
stage ran included through :func:`chipdse.core.cpu.tree_cpu_s`), reports it to ``progress`` and, for a
stage marked ``keep``, reads its artifacts from the run's :class:`chipdse.runtime.store.Checkpoints` or stores them
as soon as it finishes, so an interrupted run resumes after its last finished stage.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Generic, TypeVar, cast

from chipdse.core.cpu import tree_cpu_s
from chipdse.core.errors import ChipdseError
from chipdse.runtime.store import Checkpoints

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)

Progress = Callable[[str, float], None]
"""Called with a stage description and the fraction done of the current stage."""


def no_progress(_msg: str, _frac: float) -> None:
    """A :data:`Progress` that shows nothing."""


@dataclass(frozen=True)
class Key(Generic[T_co]):
    """The name of an artifact of type ``T`` in a :class:`Context` (e.g. ``TABLE: Key[DesignTable]``)."""

    name: str


class MissingArtifactError(ChipdseError):
    """A stage ran before the stage that makes one of its inputs (a defect of the stage list, not of the input)."""


class Context:
    """The artifacts of one run by name: what its stages have made so far, plus its inputs.

    Parameters
    ----------
    **inputs
        The run's inputs by key name (e.g. ``scenario=...``, ``solver=...``).
    """

    def __init__(self, **inputs: object) -> None:
        self._values: dict[str, object] = dict(inputs)

    def has(self, key: Key[T]) -> bool:
        """Whether the artifact is present."""
        return key.name in self._values

    def get(self, key: Key[T]) -> T:
        """The artifact of ``key``.

        Raises
        ------
        MissingArtifactError
            It is not there.
        """
        if key.name not in self._values:
            msg = f"no artifact {key.name!r} in this run (made so far: {', '.join(sorted(self._values))})"
            raise MissingArtifactError(msg)
        return cast(T, self._values[key.name])

    def put(self, key: Key[T], value: T) -> None:
        """Set the artifact of ``key``."""
        self._values[key.name] = value


@dataclass(frozen=True)
class Stage:
    """One step of a study.

    Attributes
    ----------
    name : str
        The stage's name: its timing key (``<name>_s``) and its checkpoint's name.
    needs, makes : tuple of Key
        The artifacts it reads and the ones it must make.
    run : callable(Context) -> None
        Reads ``needs`` and puts ``makes`` (through :meth:`Context.get` / :meth:`Context.put`).
    describe : callable(Context) -> str
        What the stage does, for the progress display (called before it runs).
    keep : bool
        Store its artifacts in the run's checkpoints (a costly stage); cheap stages are recomputed on a rerun.
    note : callable(Context) -> str, optional
        One line saying what a kept stage holds (e.g. ``"174,720 points scored"``), for the store's messages.
    when : callable(Context) -> bool, optional
        Run only when this says so (e.g. the scenario enables the stage); default always.
    """

    name: str
    needs: tuple[Key[object], ...]
    makes: tuple[Key[object], ...]
    run: Callable[[Context], None]
    describe: Callable[[Context], str] = field(default=lambda ctx: "")
    keep: bool = False
    note: Callable[[Context], str] | None = None
    when: Callable[[Context], bool] | None = None


@dataclass
class Timings:
    """Wall-clock and CPU seconds per stage (``time.perf_counter``; ``time.process_time`` plus the CPU of finished
    worker processes), keyed ``<stage>_s``."""

    wall_s: dict[str, float] = field(default_factory=dict)
    cpu_s: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        """Time the ``with`` block as ``name`` (e.g. ``"speedups_s"``), as :func:`run_stages` times a stage."""
        w0, c0 = time.perf_counter(), tree_cpu_s()
        yield
        self.wall_s[name] = time.perf_counter() - w0
        self.cpu_s[name] = tree_cpu_s() - c0


def run_stages(stages: Sequence[Stage], ctx: Context, *, checkpoints: Checkpoints | None = None,
               progress: Progress = no_progress, timings: Timings | None = None) -> Context:
    """Run ``stages`` in order on ``ctx``.

    Parameters
    ----------
    stages : sequence of Stage
    ctx : Context
        The run's inputs; the stages add their artifacts to it.
    checkpoints : Checkpoints, optional
        Where kept stages are read from and stored (``None``: every stage is computed, nothing kept).
    progress : callable(str, float)
        Told each stage's description as it starts.
    timings : Timings, optional
        Filled with each stage's wall and CPU seconds (stages that do not run are left out).

    Returns
    -------
    Context
        ``ctx``, with every stage's artifacts.

    Raises
    ------
    MissingArtifactError
        A stage needs an artifact no earlier stage made (its message names the stage), or did not make one it
        declares.
    KeyboardInterrupt
        Passed on; every kept stage finished before it is in ``checkpoints``.
    """
    timings = timings if timings is not None else Timings()
    for stage in stages:
        if stage.when is not None and not stage.when(ctx):
            continue
        missing = [k.name for k in stage.needs if not ctx.has(k)]
        if missing:
            msg = f"stage {stage.name!r} needs {', '.join(missing)}, which no earlier stage made"
            raise MissingArtifactError(msg)
        message = stage.describe(ctx)
        if message:
            progress(message, 0.0)
        w0, c0 = time.perf_counter(), tree_cpu_s()

        def compute(stage: Stage = stage) -> tuple[object, ...]:
            stage.run(ctx)
            absent = [k.name for k in stage.makes if not ctx.has(k)]
            if absent:
                msg = f"stage {stage.name!r} did not make {', '.join(absent)}"
                raise MissingArtifactError(msg)
            return tuple(ctx.get(k) for k in stage.makes)

        if stage.keep and checkpoints is not None:
            note = stage.note

            def say(values: tuple[object, ...], stage: Stage = stage, note: Callable[[Context], str] | None = note
                    ) -> str:
                for k, v in zip(stage.makes, values, strict=True):
                    ctx.put(k, v)
                return note(ctx) if note is not None else stage.name

            values = checkpoints.run(stage.name, compute, say)
            for k, v in zip(stage.makes, values, strict=True):
                ctx.put(k, v)
        else:
            compute()
        timings.wall_s[f"{stage.name}_s"] = time.perf_counter() - w0
        timings.cpu_s[f"{stage.name}_s"] = tree_cpu_s() - c0
    return ctx
