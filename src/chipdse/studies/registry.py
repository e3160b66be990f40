"""The studies ``chipdse explore`` runs, keyed by scenario kind (see :mod:`chipdse.studies.common` for the
functions each study module exposes)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from chipdse.core.scenario import load as load_any
from chipdse.core.specs import SCENARIO_KINDS
from chipdse.studies.hydra import explore
from chipdse.studies.nova import study as nova
from chipdse.studies.snake import study as snake

STUDIES: dict[str, ModuleType] = {explore.KIND: explore, snake.KIND: snake, nova.KIND: nova}
"""Study module by scenario kind: ``hydra`` (the chiplet DSE), ``snake`` and ``nova``."""

assert tuple(STUDIES) == SCENARIO_KINDS


def load_study(path: Path | None) -> tuple[ModuleType, Any]:
    """Load any scenario file (the bundled HYDRA default when ``path`` is None) and return its study module and
    the checked scenario.

    Raises
    ------
    SpecError
        As :func:`chipdse.core.scenario.load`, or the study's own check (e.g. an unsupported model card).
    """
    loaded = load_any(path)
    study = STUDIES[loaded.spec.kind]
    return study, study.check(loaded)
