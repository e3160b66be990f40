"""Each study's parameter register function by scenario kind (``chipdse params``), apart from the studies'
runners so that reading a register imports no solver, simulator or pandas (:mod:`chipdse.inputs`).

:data:`chipdse.studies.registry.STUDIES` takes its ``params`` entries from here: one mapping serves both.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path

from chipdse.core.params import ParamRow
from chipdse.core.specs import SCENARIO_KINDS
from chipdse.studies.hydra import params as hydra_params
from chipdse.studies.params import study_params

REGISTERS: dict[str, Callable[[Path | None], list[ParamRow]]] = {
    "hydra": hydra_params.params,
    "snake": functools.partial(study_params, "snake"),
    "nova": functools.partial(study_params, "nova"),
}
"""Parameter register with a scenario's values (its bundled one when None), by scenario kind."""

assert tuple(REGISTERS) == SCENARIO_KINDS
