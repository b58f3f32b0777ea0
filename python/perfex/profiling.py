"""The phases of a run, as the library times them (perfex/profiling.hpp): a list of
(name, depth, seconds) in the order the phases ran, a phase that ran several times once with its
total. The Python drivers (a frame over MPI ranks, an exposure) add their own phases, each inside
a Kokkos profiling region "perfex::<name>" as the library's, so Kokkos Tools show them too."""

import contextlib
import time

from . import _perfex


class PhaseTimes:
    """Phases as (name, depth, seconds), merged by name and depth as the library merges them."""

    def __init__(self, phases=()):
        self.list = []
        self.extend(phases)

    def add(self, name, depth, seconds):
        for p in self.list:
            if p[0] == name and p[1] == depth:
                p[2] += seconds
                return
        self.list.append([name, depth, seconds])

    def extend(self, phases, depth=0):
        """Another run's phases (a list of (name, depth, seconds)), `depth` levels deeper."""
        for name, d, seconds in phases:
            self.add(name, d + depth, seconds)

    def tuples(self):
        return [tuple(p) for p in self.list]

    @contextlib.contextmanager
    def phase(self, name, depth=0):
        """Times the block as phase `name`, inside the profiling region "perfex::<name>"."""
        _perfex.push_region("perfex::" + name)
        start = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, depth, time.perf_counter() - start)
            _perfex.pop_region()


def format_phases(phases, title):
    """The phases as lines "  name  seconds" under `title`, indented by depth (as perfex-extract
    --timing prints them)."""
    return _perfex.format_phases([tuple(p) for p in phases], title)
