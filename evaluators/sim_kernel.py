"""The event kernel of the serving simulator: a time-ordered heap, ``step()`` and ``run(until_s)``.

Events are kept in a heap keyed by ``(time_s, priority, seq)``: ``priority`` is the :class:`EventKind` value,
so events at the same instant are handled in the order the enum documents, and ``seq`` comes from a counter
owned by the kernel, so equal (time, kind) pairs are handled first in, first out. Nothing is shared between
kernels and nothing is random: the same handlers and initial events give the same run. Handlers receive one
event and return the events it causes; only the kernel touches the heap (STYLE.md item 9; as in SimPy
``core.py`` and Vidur ``simulator.py``).
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from chipdse.core.errors import ChipdseError


class SimulationError(ChipdseError, ValueError):
    """A simulator input or configuration is malformed (the message names the field and the value)."""


class EventKind(IntEnum):
    """What happened; the value is the tie-break among events at the same time (lower first).

    Completions come before new work, so an arrival at the instant a chiplet frees up sees it free, and a
    request finishing at the instant another is admitted has already released its memory.
    """

    ITERATION_DONE = 0
    """The last decode stage of a micro-batch iteration finished: one token for each of its requests."""
    PREFILL_DONE = 1
    """A prefill chunk left the last prefill stage; after a job's last chunk, its requests' first tokens."""
    STAGE_DONE = 2
    """An intermediate pipeline stage finished on a chiplet; the job moves on to the next stage."""
    ARRIVAL = 3
    """A request arrives in the request pool."""
    BATCH_TIMEOUT = 4
    """A waiting request's static-batch formation timeout ran out (after same-instant arrivals, which join)."""


@dataclass(frozen=True, slots=True)
class Event:
    """One scheduled occurrence.

    Attributes
    ----------
    time_s : float
        Simulated time at which it happens, s.
    kind : EventKind
    payload : Any
        What the handler needs (a request, a stage job); the kernel never looks at it.
    """

    time_s: float
    kind: EventKind
    payload: Any = None


Handler = Callable[[Event], Iterable[Event]]


class Kernel:
    """A deterministic discrete-event loop.

    Parameters
    ----------
    handlers : Mapping[EventKind, Callable[[Event], Iterable[Event]]]
        One handler per event kind; each returns the events its event causes (possibly none).
    record : bool
        Keep the ``(time_s, kind)`` of every handled event in :attr:`timeline` (for tests and debugging).

    Raises
    ------
    SimulationError
        From :meth:`schedule` when an event lies in the past or its time is not finite, and from :meth:`run`
        when ``until_s`` is before the current time.
    """

    def __init__(self, handlers: Mapping[EventKind, Handler], record: bool = False) -> None:
        self._handlers = dict(handlers)
        self._heap: list[tuple[float, int, int, Event]] = []
        self._seq = itertools.count()
        self.now_s = 0.0
        """Time of the event being (or last) handled, s."""
        self.n_events = 0
        """Events handled so far."""
        self.timeline: list[tuple[float, EventKind]] | None = [] if record else None
        """``(time_s, kind)`` of every handled event when ``record`` is set, else ``None``."""

    def schedule(self, event: Event) -> None:
        """Put ``event`` on the heap.

        Raises
        ------
        SimulationError
            When ``event.time_s`` is before the current time or not finite.
        """
        t = event.time_s
        if not t >= self.now_s or t == math.inf:
            msg = f"event {event.kind.name} at time_s={t!r} is before the current time {self.now_s!r} or not finite"
            raise SimulationError(msg)
        heapq.heappush(self._heap, (t, event.kind, next(self._seq), event))

    def peek_s(self) -> float | None:
        """Return the time of the next event, or ``None`` when the heap is empty."""
        return self._heap[0][0] if self._heap else None

    def step(self) -> Event:
        """Handle the next event, schedule what it returns, and return it.

        Raises
        ------
        IndexError
            When no event is scheduled.
        """
        t, _, _, event = heapq.heappop(self._heap)
        self.now_s = t
        self.n_events += 1
        if self.timeline is not None:
            self.timeline.append((t, event.kind))
        for new in self._handlers[event.kind](event):
            self.schedule(new)
        return event

    def run(self, until_s: float | None = None, stop: Callable[[], bool] | None = None) -> int:
        """Handle events in order while the next one is at or before ``until_s`` (all of them when ``None``)
        and, when ``stop`` is given, until it returns True (checked before every event).

        Returns
        -------
        int
            Number of events handled by this call.

        Raises
        ------
        SimulationError
            When ``until_s`` is before the current time.
        """
        limit = math.inf if until_s is None else until_s
        if limit < self.now_s:
            msg = f"run(until_s={until_s!r}) is before the current time {self.now_s!r}"
            raise SimulationError(msg)
        start = self.n_events
        heap = self._heap
        if stop is None:
            while heap and heap[0][0] <= limit:
                self.step()
        else:
            while heap and heap[0][0] <= limit and not stop():
                self.step()
        return self.n_events - start
