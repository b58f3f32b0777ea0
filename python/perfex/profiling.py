"""The phases of a run, as the library times them (perfex/profiling.hpp): PhaseTimes, the
library's recorder, which the Python drivers (a frame over MPI ranks, a frame's files, an
exposure) time their own phases into (each inside a Kokkos profiling region "perfex::<name>",
as the library's, so Kokkos Tools show them too) and hand to the library's jobs, whose phases
then sit inside theirs. phases.list(): (name, depth, seconds) in the order the phases started,
a phase that ran several times once with its total."""

from . import _perfex
from ._perfex import PhaseTimes


def recorder(phases=None):
    """The PhaseTimes a driver times into: the caller's, or a new one (phases None)."""
    if phases is None:
        return PhaseTimes()
    if not isinstance(phases, PhaseTimes):
        raise TypeError(f"phases: a perfex.PhaseTimes or None, got {type(phases).__name__}")
    return phases


def format_phases(phases, title):
    """The phases (a PhaseTimes or a list of (name, depth, seconds)) as lines "  name  seconds"
    under `title`, indented by depth (as perfex-extract --timing prints them)."""
    if isinstance(phases, PhaseTimes):
        phases = phases.list()
    return _perfex.format_phases([tuple(p) for p in phases], title)


__all__ = ["PhaseTimes", "format_phases", "recorder"]
