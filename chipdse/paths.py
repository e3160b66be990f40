"""Where the bundled data and the shared research folder are."""

from __future__ import annotations

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent


def instances_dir() -> Path:
    """Return the bundled ``instances/`` folder (data only)."""
    return PROJECT_ROOT / "instances"


def shared_dir() -> Path:
    """Return ``../shared`` next to the project root (present in CI, absent in a user's clone)."""
    return PROJECT_ROOT.parent / "shared"
