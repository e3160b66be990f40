"""Where the bundled data and the shared research folder are."""

from __future__ import annotations

from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parent.parent  # chipdse/
PROJECT_ROOT = PACKAGE_DIR.parent


def instances_dir() -> Path:
    """Return the bundled ``instances/`` folder (data only; ``chipdse/instances`` links to it in a checkout and
    holds a copy in an installed wheel)."""
    return (PACKAGE_DIR / "instances").resolve()


def shared_dir() -> Path:
    """Return ``../shared`` next to the project root (present in CI, absent in a user's clone)."""
    return PROJECT_ROOT.parent / "shared"
