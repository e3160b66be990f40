"""Where the bundled data and the shared research folder are."""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent
"""The package's own folder: ``site-packages/chipdse`` when installed from a wheel, ``src/chipdse`` in a checkout
(an editable install links its files, and resolving this file's link lands in the checkout)."""
PROJECT_ROOT = (PACKAGE_DIR.parent.parent if PACKAGE_DIR.parent.name == "src"
                and (PACKAGE_DIR.parent.parent / "pyproject.toml").is_file() else PACKAGE_DIR.parent)
"""The checkout's root (the folder of ``pyproject.toml``), or ``site-packages`` for a wheel."""


def instances_dir() -> Path:
    """Return the bundled ``instances/`` folder (data only): the checkout's top-level ``instances/``, or the copy a
    wheel installs as ``chipdse/instances``."""
    bundled = PACKAGE_DIR / "instances"
    return bundled if bundled.is_dir() else PROJECT_ROOT / "instances"


def shared_dir() -> Path:
    """Return ``../shared`` next to the project root (present in CI, absent in a user's clone)."""
    return PROJECT_ROOT.parent / "shared"
