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


MAX_SHOWN_CHARS = 60
"""Longest offending value a message quotes: a longer one is cut (a 200,000-digit number stays one short line)."""


def shorten(value: object, limit: int = MAX_SHOWN_CHARS) -> str:
    """The ``repr`` of ``value``, cut to about ``limit`` characters with its full length noted when longer.

    Parameters
    ----------
    value : object
        The offending value a message quotes.
    limit : int
        Most characters of the ``repr`` shown.

    Returns
    -------
    str
        E.g. ``'12345...' (200,002 characters)``.
    """
    text = repr(value)
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"


class InfeasibleDesignError(ChipdseError):
    """A design cannot be built at all (e.g. its chiplets need more area than the interposer has), or no design of
    the space serves the scenario (nothing stable at the offered load, a power limit nothing meets).

    Parameters
    ----------
    message : str
        The one-line message (it names the file and field to change where there is one).
    source : str, optional
        That file, for machine-readable errors (``chipdse simulate --json``).
    field : str, optional
        That field.
    """

    def __init__(self, message: str, source: str | None = None, field: str | None = None) -> None:
        self.source = source
        self.field = field
        super().__init__(message)
