"""The phases of the Python drivers are Kokkos profiling regions, as the library's: perfex's own
Kokkos Tools library (tests/profiling/region_recorder.cpp, loaded through the variable this
Kokkos reads) records them, nested as the drivers run them, and frame.phases names the same
phases in the same order."""

import glob
import os

import pytest

from conftest import data_path, mpirun, run_python

RECORDER = os.environ.get("PERFEX_REGION_RECORDER")
VARIABLE = os.environ.get("PERFEX_KOKKOS_TOOLS_VARIABLE", "KOKKOS_TOOLS_LIBS")
pytestmark = pytest.mark.skipif(
    not RECORDER, reason="PERFEX_REGION_RECORDER (set by CTest) names the region recorder library"
)

GRID = dict(wavelength="5760,5860,0.8", specmin=0, nspec=10, psferr=0.01)
# python3 -c EXTRACT IMAGE PSF [mpi]: prints rank 0's frame.phases.
EXTRACT = (
    """
import sys, perfex
comm = None
if sys.argv[3:] == ["mpi"]:
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
frame = perfex.extract_frame(perfex.read_preproc(sys.argv[1]), psf=sys.argv[2], comm=comm,
                             progress=False, **%r)
if frame is not None:
    print(repr(frame.phases))
"""
    % GRID
)


def tree(path):
    """The regions of a recorder log as (depth, name) in the order they were entered."""
    regions, depth = [], 0
    for line in open(path):
        word, _, name = line.rstrip("\n").partition(" ")
        if word == "push":
            regions.append((depth, name))
            depth += 1
        elif word == "pop":
            depth -= 1
    assert depth == 0, "unbalanced regions"
    return regions


def drivers_phases(regions):
    """The phases of a region tree as frame.phases names them: without "perfex::", the
    drivers' own regions (plan_frame, extract_frame) left out and their phases one level up."""
    phases, outer = [], []
    for depth, name in regions:
        del outer[depth:]
        outer.append(name)
        if name in ("perfex::plan_frame", "perfex::extract_frame"):
            continue
        inside = sum(1 for o in outer[:-1] if o not in ("perfex::plan_frame", "perfex::extract_frame"))
        phases.append((name[len("perfex::") :], inside))
    return phases


def test_api_phases_are_regions(tmp_path):
    log = tmp_path / "regions.log"
    r = run_python(
        ["-c", EXTRACT, data_path("sim-r0-b0-1.fits.gz"), data_path("psf-r0-00051060.fits")],
        PERFEX_REGION_LOG=str(log),
        **{VARIABLE: RECORDER},
    )
    assert r.returncode == 0, r.stderr
    regions = tree(log)
    assert [name for depth, name in regions if depth == 0] == [
        "perfex::job::check",
        "perfex::job::plan",
        "perfex::job::extract",
    ]
    assert (1, "perfex::plan_frame") in regions and (2, "perfex::extract_frame::solve") in regions
    phases = eval(r.stdout.strip().splitlines()[-1])
    assert [(name, depth) for name, depth, _ in phases] == drivers_phases(regions)


@pytest.mark.mpi
def test_mpi_phases_are_regions(tmp_path):
    log = tmp_path / "regions-{pid}.log"
    os.environ["PERFEX_REGION_LOG"], os.environ[VARIABLE] = str(log), RECORDER
    try:
        r = mpirun(2, ["-c", EXTRACT, data_path("sim-r0-b0-1.fits.gz"), data_path("psf-r0-00051060.fits"), "mpi"])
    finally:
        del os.environ["PERFEX_REGION_LOG"], os.environ[VARIABLE]
    assert r.returncode == 0, r.stderr
    logs = glob.glob(str(tmp_path / "regions-*.log"))
    assert len(logs) == 2
    mpi = [
        "perfex::mpi::check",
        "perfex::mpi::scatter",
        "perfex::mpi::extract",
        "perfex::mpi::gather",
        "perfex::mpi::assemble",
    ]
    for path in logs:
        regions = tree(path)
        assert [name for depth, name in regions if depth == 0] == mpi
        # Every rank extracts its patches inside mpi::extract.
        extract = regions.index((0, "perfex::mpi::extract"))
        assert regions[extract + 1 : extract + 4] == [
            (1, "perfex::job::check"),
            (1, "perfex::job::plan"),
            (2, "perfex::plan_frame"),
        ] or regions[extract + 1] == (1, "perfex::job::extract")
    phases = eval(r.stdout.strip().splitlines()[-1])  # rank 0's
    assert [name for name, depth, _ in phases if depth == 0] == [m[len("perfex::") :] for m in mpi]
