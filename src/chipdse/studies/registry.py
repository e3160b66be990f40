"""The studies ``chipdse explore`` runs, keyed by scenario kind, each one typed :class:`Study` record."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from chipdse.core.params import ParamRow
from chipdse.core.scenario import AnyScenario
from chipdse.core.scenario import load as load_any
from chipdse.core.specs import SCENARIO_KINDS
from chipdse.runtime.store import Checkpoints
from chipdse.studies.common import Settings
from chipdse.studies.hydra import explore
from chipdse.studies.nova import study as nova
from chipdse.studies.pipeline import Progress
from chipdse.studies.registers import REGISTERS
from chipdse.studies.snake import study as snake

S = TypeVar("S")
"""The study's loaded scenario type."""
R = TypeVar("R")
"""The study's result type."""


@dataclass(frozen=True)
class Study(Generic[S, R]):
    """What a study gives the API and the command line.

    Attributes
    ----------
    kind : str
        The scenario ``kind`` it runs (``hydra``, ``snake``, ``nova``).
    load : callable(Path or None) -> scenario
        Load a scenario file of this kind (the bundled default when None, HYDRA only), refusing other kinds.
    check : callable(any loaded scenario) -> scenario
        The study's own checks of a loaded scenario (e.g. an unsupported model card), returning it typed.
    label : callable(scenario) -> str
        One line saying what ``run`` will do (for a progress display).
    run : callable(scenario, settings, progress, checkpoints) -> result
        Every table of the study's report; ``checkpoints`` keep finished stages (HYDRA only: ``keeps_stages``).
    summary : callable(result) -> dict
        The headline numbers (the manifest's ``summary``).
    headline : callable(result) -> list[str]
        The lines ``chipdse explore`` prints.
    params : callable(Path or None) -> list of ParamRow
        The study's parameter register with the values of the scenario given (its bundled one when None):
        ``chipdse params``.
    keeps_stages : bool
        Whether ``run`` keeps its finished stages in a results store (``--store``).
    warnings : callable(scenario) -> list of str
        One line each that ``chipdse explore`` prints (``warning: ...``, stderr) before the run: a setting the
        study runs with but the architect should know about (e.g. SNAKE contexts past a card's maximum); none by
        default.
    """

    kind: str
    load: Callable[[Path | None], S]
    check: Callable[[AnyScenario], S]
    label: Callable[[S], str]
    run: Callable[[S, Settings, Progress, Checkpoints | None], R]
    summary: Callable[[R], dict[str, Any]]
    headline: Callable[[R], list[str]]
    params: Callable[[Path | None], list[ParamRow]]
    keeps_stages: bool = False
    warnings: Callable[[S], list[str]] = lambda _sc: []


STUDIES: dict[str, Study[Any, Any]] = {
    explore.KIND: Study(explore.KIND, explore.load, explore.check, explore.label, explore.run, explore.summary,
                        explore.headline, REGISTERS[explore.KIND], keeps_stages=True),
    snake.KIND: Study(snake.KIND, snake.load, snake.check, snake.label, snake.run, snake.summary, snake.headline,
                      REGISTERS[snake.KIND], warnings=snake.warnings),
    nova.KIND: Study(nova.KIND, nova.load, nova.check, nova.label, nova.run, nova.summary, nova.headline,
                     REGISTERS[nova.KIND]),
}
"""Study by scenario kind: ``hydra`` (the chiplet DSE), ``snake`` and ``nova``."""

assert tuple(STUDIES) == SCENARIO_KINDS


def load_study(path: Path | None) -> tuple[Study[Any, Any], Any]:
    """Load any scenario file (the bundled HYDRA default when ``path`` is None) and return its study and the checked
    scenario.

    Raises
    ------
    SpecError
        As :func:`chipdse.core.scenario.load`, or the study's own check (e.g. an unsupported model card).
    """
    loaded = load_any(path)
    study = STUDIES[loaded.spec.kind]
    return study, study.check(loaded)
