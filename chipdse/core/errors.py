"""Error types: every user-facing failure is a :class:`ChipdseError` with a one-line message."""

from __future__ import annotations


class ChipdseError(Exception):
    """Base class of every error chipdse raises on bad input or an impossible design.

    The CLI prints ``str(error)`` on one line and exits with code 2, never a traceback.
    """


class SpecError(ChipdseError):
    """A scenario, library, package, model or trace file is missing or malformed.

    Parameters
    ----------
    source : str
        The file (or object) the bad value came from.
    field : str
        Dotted path of the offending field, or ``""`` for the whole file.
    expected : str
        What was expected, with the offending value where there is one.
    """

    def __init__(self, source: str, field: str, expected: str) -> None:
        self.source = source
        self.field = field
        self.expected = expected
        where = f"{source}: {field}: " if field else f"{source}: "
        super().__init__(where + expected)


class InfeasibleDesignError(ChipdseError):
    """A design cannot be built at all (e.g. its chiplets need more area than the interposer has)."""
