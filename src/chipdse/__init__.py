"""chipdse: solver-based design-space exploration for LLM-serving chiplet and near-memory hardware.

The Python API for notebooks (:mod:`chipdse.api`) is available from the package itself::

    import chipdse
    sc = chipdse.load_scenario("instances/scenarios/snake-stratum.yaml")
    run = chipdse.explore(sc)
    run.to_pandas()

``chipdse.load_scenario``, ``explore``, ``sweep``, ``compare``, ``solve``, ``simulate`` and ``generality`` are
the functions of :mod:`chipdse.api`, which the ``chipdse`` command line runs. The API imports the whole tool
(Pyomo, OR-Tools, matplotlib, ...), so it is loaded on the first use of one of these names (PEP 562 module
``__getattr__``, through :func:`importlib.import_module`: the project forbids function-local ``import``
statements); ``import chipdse`` and ``import chipdse.cli`` stay light (tests/test_startup.py).
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from typing import Any

try:
    __version__ = version("chipdse")
    """The installed distribution's version (``chipdse --version``)."""
except PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"

API_NAMES = ("load_scenario", "grid", "explore", "sweep", "compare", "solve", "simulate", "generality")
"""The names ``chipdse.<name>`` resolves to :mod:`chipdse.api`'s functions of the same name."""

__all__ = list(API_NAMES)


def __getattr__(name: str) -> Any:
    """``chipdse.<name>`` for a name of :data:`API_NAMES`: the function of :mod:`chipdse.api`, imported now.

    Raises
    ------
    AttributeError
        Any other name (as for a module without it).
    """
    if name in API_NAMES:
        return getattr(importlib.import_module("chipdse.api"), name)
    msg = f"module 'chipdse' has no attribute {name!r}"
    raise AttributeError(msg)


def __dir__() -> list[str]:
    """What ``dir(chipdse)`` and tab completion show: the API's names and ``__version__``, not this module's
    imports."""
    return sorted([*API_NAMES, "__version__"])
