"""The phases of a run in one recorder, the library's PhaseTimes, which the Python drivers and the
library's jobs both time into: a phase started inside another sits one level below it, so a
caller's own phases hold perfex's; every front end chooses between one process and MPI ranks in
one place and passes through the MPI driver at most once."""

import numpy as np
import perfex
import perfex.dispatch
import pytest
from perfex import gpu_specter

QUICK = dict(wavelength="5760,5860,0.8", specmin=0, nspec=10, psferr=0.01)


def names(phases):
    return [(name, depth) for name, depth, _ in phases]


def test_a_callers_phase_holds_perfexs(masked, psf):
    alone = perfex.extract_frame(masked, psf=psf, progress=False, **QUICK)
    phases = perfex.PhaseTimes()
    with phases.phase("pipeline::extract"):
        assert phases.level == 1
        frame = perfex.extract_frame(masked, psf=psf, progress=False, phases=phases, **QUICK)
    assert phases.level == 0
    got = phases.list()
    assert names(got) == [("pipeline::extract", 0)] + [(name, depth + 1) for name, depth in names(alone.phases)]
    assert got[0][2] >= sum(seconds for _, depth, seconds in got if depth == 1) > 0
    assert np.array_equal(frame.flux, alone.flux)
    # A phase that runs again adds to its entry.
    with phases.phase("pipeline::extract"):
        pass
    assert [name for name, _ in names(phases.list())].count("pipeline::extract") == 1


def test_phases_is_a_recorder(masked, psf):
    with pytest.raises(TypeError, match="phases: a perfex.PhaseTimes or None, got list"):
        perfex.extract_frame(masked, psf=psf, progress=False, phases=[], **QUICK)


def test_an_exception_closes_the_phase():
    phases = perfex.PhaseTimes()
    with pytest.raises(KeyError):
        with phases.phase("pipeline::failing"):
            {}["missing"]
    assert phases.level == 0 and names(phases.list()) == [("pipeline::failing", 0)]


def test_one_choice_one_driver_call(masked, psf, monkeypatch):
    """perfex.extract_frame and the gpu_specter drop-in's each make one call of the choice
    between one process and MPI ranks (perfex.dispatch.extract), the drop-in through
    perfex.extract_frame."""
    calls = []
    choose = perfex.dispatch.extract
    monkeypatch.setattr(perfex.dispatch, "extract", lambda *a, **k: calls.append(a[0]) or choose(*a, **k))
    perfex.extract_frame(masked, psf=psf, progress=False, **QUICK)
    assert calls == [None]
    timing = {}
    gpu_specter.extract_frame(
        {"image": masked.pixels, "ivar": masked.ivar}, psf, 25, 0, 10, "5760,5860,0.8", psferr=0.01, timing=timing
    )
    assert calls == [None, None]
    assert list(timing)[-1] == "assembled-frame" and timing["extracted-bundles"] >= timing["host-to-device"]
