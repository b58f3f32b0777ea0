"""MPI: frames bitwise identical for any rank count; an exposure over rank groups with one
broken frame. Each test starts `mpirun --oversubscribe` (one thread per rank)."""

import os
import re

import numpy as np
import perfex
import pytest
from perfex import gpu_specter

from conftest import (
    HERE,
    NAN_GRID,
    NAN_PIXELS,
    SMALL,
    assert_frames_identical,
    mpirun,
    output,
    run_python,
    timing_phases,
)

pytestmark = pytest.mark.mpi


@pytest.mark.parametrize("nranks", [3, 2, 4])
def test_library_ranks_bitwise(nranks, masked, psf, small_frame, tmp_path):
    out = tmp_path / "frame.npz"
    nan = ["nan"] if nranks == 3 else []
    r = mpirun(nranks, [os.path.join(HERE, "mpi_worker.py"), masked.path, psf.source, str(out)] + nan)
    assert r.returncode == 0, output(r)
    got = np.load(out)
    assert_frames_identical(small_frame, got)
    assert int(got["npatches"]) == small_frame.npatches
    single = gpu_specter.extract_frame(
        {"image": masked.pixels, "ivar": masked.ivar},
        psf,
        25,
        SMALL["specmin"],
        SMALL["nspec"],
        SMALL["wavelength"],
        nsubbundles=5,
        psferr=0.01,
        model=True,
    )
    for key, value in single.items():
        if value is not None:
            assert np.array_equal(got["drop_in_" + key], value), key
    if nan:  # NaN pixels: masked and counted once for the frame's pixels, as in one process
        pixels = masked.pixels.copy()
        for row, col in NAN_PIXELS:
            pixels[row, col] = np.nan
        one = perfex.extract_frame(pixels, masked.ivar, psf, progress=False, **NAN_GRID)
        assert one.nonfinite_pixels == int(got["nan_count"]) == 2
        assert list(got["nan_warnings"]) == one.warnings and len(one.warnings) == 1
        assert np.array_equal(got["nan_flux"], one.flux) and np.array_equal(got["nan_ivar"], one.ivar)
        failed = perfex.extract_frame(masked.pixels, masked.ivar, psf, progress=False, regularize=1e300, **NAN_GRID)
        assert failed.failed_patches == int(got["failed_patches"]) > 0
        assert np.array_equal(got["failed_mask"], failed.mask)
        assert np.all(failed.mask & 0x180 == 0x180)  # BAD2DFIT | NODATA: every patch failed


def test_command_line_three_ranks_bitwise(masked, psf, small_frame, tmp_path):
    out = tmp_path / "frame.fits"
    args = [
        "-m",
        "perfex.extract",
        "--mpi",
        "-i",
        masked.path,
        "-p",
        psf.source,
        "-o",
        str(out),
        "-w",
        SMALL["wavelength"],
        "-s",
        str(SMALL["specmin"]),
        "-n",
        str(SMALL["nspec"]),
        "--psferr",
        "0.01",
    ]
    r = mpirun(3, args)
    printed = output(r)  # desiutil's logger prints on stdout, logging's on stderr
    assert r.returncode == 0, printed
    assert "on 3 ranks" in printed
    assert re.search(r"patches \(100 %\) of rank 0's share \(patches 0-\d+ of the frame's \d+\)", printed), printed
    perfex.write_frame(tmp_path / "single.fits", small_frame, masked.path, psf.source)
    assert_frames_identical(perfex.read_frame(out), perfex.read_frame(tmp_path / "single.fits"))


def test_command_line_over_ranks_as_in_one_process(masked, psf, tmp_path):
    """A frame's files over two ranks: perfex-extract's phases, the MPI driver's in place of
    job::extract (the job's inside them), and the same header as in one process, each warning of
    the run once (nspec clipped to the PSF's fibres; the FIBERMAP without their rows)."""
    fits = pytest.importorskip("astropy.io.fits")
    grid = ["-w", "5760,5800,0.8", "-s", "490", "--psferr", "0.01", "--timing", "-p", psf.source]
    r = mpirun(2, ["-m", "perfex", "--mpi", "-i", masked.path, "-o", str(tmp_path / "ranks.fits")] + grid)
    assert r.returncode == 0, output(r)
    one = run_python(["-m", "perfex", "-i", masked.path, "-o", str(tmp_path / "one.fits")] + grid)
    assert one.returncode == 0, one.stderr
    phases = timing_phases(output(one))
    mpi = [("  ", "mpi::check"), ("  ", "mpi::scatter"), ("  ", "mpi::extract"), ("    ", "job::extract")]
    mpi += [("      ", f"extract_frame::{p}") for p in ("allocate", "spots", "solve", "finish")]
    mpi += [("  ", "mpi::gather"), ("  ", "mpi::assemble")]
    extract = phases.index(("  ", "job::extract"))
    assert timing_phases(output(r)) == phases[:extract] + mpi + phases[extract + 5 :]
    headers = []
    for name in ("ranks", "one"):
        with fits.open(tmp_path / f"{name}.fits") as f:
            headers.append((f["FLUX"].header["NWARN"], [str(c) for c in f["FLUX"].header["COMMENT"]]))
    assert headers[0] == headers[1] and headers[0][0] == 2, headers
    assert_frames_identical(perfex.read_frame(tmp_path / "ranks.fits"), perfex.read_frame(tmp_path / "one.fits"))


def test_specter_geometry_frame_and_model_over_ranks(masked, psf, tmp_path):
    """The specter geometry over three ranks: its frame and its model image (each patch's fit
    written over the earlier patches', rank 0 folding the others' blocks after its own in the
    plan's order) bitwise as in one process."""
    fits = pytest.importorskip("astropy.io.fits")
    grid = ["-w", "5760,5880,0.8", "-s", "3", "-n", "12", "--bundlesize", "5", "--nsubbundles", "2"]
    grid += ["--psferr", "0.01", "--geometry", "specter", "-p", psf.source, "-i", masked.path]
    outputs = {}
    for name, ranks in (("ranks", 3), ("one", 1)):
        files = ["-o", str(tmp_path / f"{name}.fits"), "-m", str(tmp_path / f"{name}-model.fits")]
        args = ["-m", "perfex", "--mpi"] + files + grid
        r = mpirun(ranks, args) if ranks > 1 else run_python(args[:2] + args[3:])
        assert r.returncode == 0, output(r)
        outputs[name] = perfex.read_frame(tmp_path / f"{name}.fits"), fits.getdata(tmp_path / f"{name}-model.fits")
    (frame, model), (one, one_model) = outputs["ranks"], outputs["one"]
    assert frame.options["geometry"] == "specter"
    assert_frames_identical(frame, one)
    assert np.count_nonzero(one_model) > 10000
    assert np.array_equal(model, one_model)


def test_errors_cross_ranks_with_their_class(masked, psf, tmp_path):
    """A failure on rank 0 or on any other rank is raised on every rank as its class and message
    (perfex.collective), in one frame and in an exposure."""
    r = mpirun(3, [os.path.join(HERE, "mpi_errors.py"), psf.source, masked.path, str(tmp_path)])
    assert r.returncode == 0 and r.stdout.strip().endswith("ok"), output(r)


def test_exposure_groups_with_a_broken_frame(clean, masked, psf, tmp_path):
    """Four ranks, three frames: groups of 2, 1 and 1 ranks; the broken frame is reported by
    name, the other two are written, the exit status is non-zero."""
    broken = tmp_path / "broken-preproc.fits"
    broken.write_bytes(b"SIMPLE  =                    T" + b" " * 2850)
    grid = ["-w", "5760,5960,0.8", "-s", "20", "-n", "10", "--psferr", "0.01"]
    listing = tmp_path / "exposure.txt"
    names = {"clean": clean.path, "broken": str(broken), "masked": masked.path}
    listing.write_text("".join(f"{path} {psf.source} {tmp_path}/frame-{name}.fits\n" for name, path in names.items()))
    r = mpirun(4, ["-m", "perfex.extract", "--mpi", "--frames", str(listing)] + grid)
    assert r.returncode != 0
    printed = output(r)
    assert "frame frame-broken.fits: FAILED" in printed and "broken-preproc.fits" in printed
    assert "1 of 3 frames failed" in printed
    assert not (tmp_path / "frame-broken.fits").exists()
    for name in ("clean", "masked"):
        pre = clean if name == "clean" else masked
        expected = perfex.extract_frame(
            pre, psf=psf, wavelength="5760,5960,0.8", specmin=20, nspec=10, psferr=0.01, progress=False
        )
        perfex.write_frame(tmp_path / f"expected-{name}.fits", expected, pre.path, psf.source)
        assert_frames_identical(
            perfex.read_frame(tmp_path / f"frame-{name}.fits"), perfex.read_frame(tmp_path / f"expected-{name}.fits")
        )


@pytest.mark.parametrize("nranks", [5, 16])
def test_many_ranks_bitwise(nranks, masked, psf, small_frame, tmp_path):
    """More ranks than the frame's three bundle pieces: every rank gets patches, the frame and
    its model image are bitwise the one-process ones (rank 0 adds the other ranks' model blocks
    in the plan's order; on 16 ranks it has no patch of its own)."""
    out = tmp_path / "frame.npz"
    r = mpirun(
        nranks,
        [
            os.path.join(HERE, "mpi_balance.py"),
            masked.path,
            psf.source,
            str(out),
            str(SMALL["specmin"]),
            str(SMALL["nspec"]),
            "model",
        ],
        timeout=900,
    )
    assert r.returncode == 0, output(r)
    got = np.load(out)
    one = perfex.extract_frame(
        masked,
        psf=psf,
        progress=False,
        wavelength="5760,6160,0.8",
        specmin=SMALL["specmin"],
        nspec=SMALL["nspec"],
        psferr=0.01,
        model_image=True,
    )
    assert_frames_identical(one, got)
    assert np.array_equal(one.model, got["model"]), np.max(np.abs(one.model - got["model"]))
    patches = got["records"][:, 0]
    assert patches.sum() == one.npatches == int(got["npatches"]) == 165
    # Dealt by their flops, rank 0 taking less for its own work (none on 16 ranks: it only
    # coordinates; test_api: test_patches_dealt_evenly).
    assert patches[1:].min() >= 1 and (patches[0] >= 1) == (nranks < 15), patches


def test_one_bundle_on_two_ranks(masked, psf, tmp_path):
    """A 1-bundle frame on 2 ranks: each rank solves about half of its 55 patches (rank 0 a few
    less, for its own work); a rank that waits sleeps (its CPU time in the call stays well
    below the call's wall time)."""
    out = tmp_path / "frame.npz"
    r = mpirun(2, [os.path.join(HERE, "mpi_balance.py"), masked.path, psf.source, str(out), "0", "25"])
    assert r.returncode == 0, output(r)
    records = np.load(out)["records"]
    patches = records[:, 0]
    assert patches.sum() == 55 and 20 <= patches[0] <= patches[1], records  # rank 0 a bit less
    # Twelve ranks on one fibre's 11 patches: the ranks left without work wait without CPU.
    r = mpirun(12, [os.path.join(HERE, "mpi_balance.py"), masked.path, psf.source, str(out), "20", "1"], timeout=900)
    assert r.returncode == 0, output(r)
    records = np.load(out)["records"]
    assert records[:, 0].sum() == 11 and (records[:, 0] == 0).any(), records
    for patches, cpu, wall in records:
        if patches == 0:
            assert cpu < 0.5 * wall, records  # no rank spins while it waits
