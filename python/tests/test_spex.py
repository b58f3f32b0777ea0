"""gpu_specter's spex command on perfex: perfex.gpu_specter.spex (parse, check_input_options,
main_gpu_specter; `python -m perfex.gpu_specter.spex`) and, with the alias, gpu_specter's own
bin/spex and bin/desi_benchmark_extract from its checkout, unchanged. The frame is
gpu_specter's: the reference extraction of the clean image, and the drop-in's own result
written by its io.write_frame."""

import os
import re
import time

import numpy as np
import perfex
import pytest
from perfex import gpu_specter
from perfex.gpu_specter import spex

from conftest import CLEAN, PSF, compare_with_reference, data_path, mpirun, reference, run_python
from test_clients import CLIENTS_PY, check, need

# The reference extraction's settings (DESI's defaults: 5 sub-bundles, 50-bin steps).
ARGS = ["-w", "5760,6760,0.8", "-s", "0", "-n", "50", "--psferr", "0.01"]


@pytest.fixture(scope="module")
def expected(psf):
    """The drop-in's frame for ARGS from the image as its io.read_img reads it (spex's input)."""
    img = gpu_specter.io.read_img(data_path(CLEAN))
    out = gpu_specter.core.extract_frame(img, psf, 25, 0, 50, "5760,6760,0.8", 50, 5, psferr=0.01, loglevel="WARNING")
    return {
        "FLUX": out["specflux"],
        "IVAR": out["specivar"],
        "RESOLUTION": out["Rdiags"],
        "CHI2PIX": out["chi2pix"],
        "WAVELENGTH": out["wave"],
        "MASK": out["specmask"],
    }


def assert_gpu_specters_frame(path, expected):
    """The frame file holds the drop-in's arrays (as written) and agrees with gpu_specter's
    reference extraction to float32 precision."""
    fits = pytest.importorskip("astropy.io.fits")
    with fits.open(path) as hdus:
        got = {h: np.asarray(hdus[h].data) for h in expected}
        assert hdus["FIBERMAP"].data is not None and len(hdus["FIBERMAP"].data) == 50
    for name, ours in expected.items():
        written = ours if name in ("WAVELENGTH", "MASK") else ours.astype(np.float32)
        assert np.array_equal(got[name], written), name
    d = compare_with_reference(
        got["FLUX"].astype(np.float64),
        got["IVAR"].astype(np.float64),
        got["RESOLUTION"].astype(np.float64),
        got["CHI2PIX"].astype(np.float64),
        reference("sim-r0-b0-1")["PIXMASK_FRACTION"],
        got["WAVELENGTH"],
        reference("sim-r0-b0-1"),
    )
    assert d["flux_sigma"] <= 1e-4 and d["ivar_rel"] <= 1e-6, d


def test_parse_is_gpu_specters():
    args = spex.parse(["-o", "frame.fits"])
    assert vars(args) == dict(
        input=None,
        psf=None,
        output="frame.fits",
        model=None,
        wavelength=None,
        specmin=0,
        nspec=500,
        regularize=0.0,
        bundlesize=25,
        nsubbundles=5,
        nwavestep=50,
        loglevel="info",
        mpi=False,
        use_gpu=False,
        psferr=None,
        async_io=False,
        pixpad_frac=0.8,
        wavepad_frac=0.2,
        wavepad=10,
        ranks_per_bundle=None,
    )
    with pytest.raises(SystemExit):
        spex.parse(["-i", "image.fits"])  # -o is required


@pytest.mark.parametrize(
    "options, message",
    [
        (["--nsubbundles", "4"], "bundlesize (25) must be evenly divisible by nsubbundles (4)"),
        (["-n", "30"], "nspec (30) must be evenly divisible by bundlesize (25)"),
        (["-s", "5"], "specmin (5) must begin at a bundle boundary"),
    ],
)
def test_check_input_options(options, message):
    assert spex.check_input_options(spex.parse(["-o", "f.fits"])) == (True, "OK")
    assert spex.check_input_options(spex.parse(["-o", "f.fits"] + options)) == (False, message)
    with pytest.raises(ValueError, match=re.escape(message)):
        spex.main_gpu_specter(spex.parse(["-o", "f.fits"] + options))


def test_use_gpu_needs_the_cuda_backend():
    ok, message = spex.check_input_options(spex.parse(["-o", "f.fits", "--use-gpu"]))
    assert ok == ("cuda" in perfex.backends())
    assert ok or message == "gpu is not available (this perfex build has no CUDA backend)"


def test_the_alias_has_spex():
    output = run_python(
        [
            "-c",
            "import perfex.gpu_specter as g; g.install_alias(); import gpu_specter.spex as s; "
            "from gpu_specter.spex import parse, check_input_options, main_gpu_specter; "
            "print(s.__name__, s.__all__)",
        ]
    )
    assert output.returncode == 0, output.stderr
    assert output.stdout.strip() == "perfex.gpu_specter.spex ['parse', 'main_gpu_specter']"


def test_main_gpu_specter_in_process(psf_path, expected, tmp_path):
    out, model = str(tmp_path / "frame.fits"), str(tmp_path / "model.fits")
    timing = {}
    spex.main_gpu_specter(
        spex.parse(["-i", data_path(CLEAN), "-p", psf_path, "-o", out, "-m", model, "--loglevel", "warning"] + ARGS),
        timing=timing,
    )
    assert_gpu_specters_frame(out, expected)
    fits = pytest.importorskip("astropy.io.fits")
    assert fits.getdata(model).shape == (4128, 4114)
    assert {"init-mpi-comm", "extracted-bundles", "assembled-frame"} <= set(timing)
    assert sorted(os.listdir(tmp_path)) == ["frame.fits", "model.fits"]


@pytest.mark.parametrize("nranks", [1, pytest.param(2, marks=pytest.mark.mpi)])
def test_python_m_spex(nranks, psf_path, expected, tmp_path):
    out = str(tmp_path / "frame.fits")
    args = ["-m", "perfex.gpu_specter.spex", "-i", data_path(CLEAN), "-p", psf_path, "-o", out] + ARGS
    result = run_python(args) if nranks == 1 else mpirun(nranks, args + ["--mpi"])
    assert result.returncode == 0, result.stdout + result.stderr
    output = result.stdout + result.stderr
    assert re.search(r"INFO:spex\.py:\d+:read:Reading image: ", output), output
    assert re.search(rf"INFO:spex\.py:\d+:write:Writing {re.escape(out)}$", output, re.M), output
    assert re.search(r"INFO:util\.py:\d+:log_splits: *extract: +\d+\.\d\d\b", output), output
    assert_gpu_specters_frame(out, expected)


def test_python_m_spex_refuses(psf_path, tmp_path):
    out = str(tmp_path / "frame.fits")
    result = run_python(
        ["-m", "perfex.gpu_specter.spex", "-i", data_path(CLEAN), "-p", psf_path, "-o", out, "-n", "30"]
    )
    assert result.returncode == 2 and "nspec (30) must be evenly divisible by bundlesize (25)" in result.stderr
    result = run_python(
        ["-m", "perfex.gpu_specter.spex", "-i", data_path(CLEAN), "-p", psf_path, "-o", out, "-s", "500", "-n", "25"]
    )
    assert result.returncode == 2 and "the PSF has 500 fibres" in result.stderr, result.stderr
    assert not os.listdir(tmp_path)


def test_gpu_specters_bin_spex(psf_path, expected, tmp_path):
    need("gpu_specter")
    out = str(tmp_path / "frame.fits")
    output = check(
        run_python([CLIENTS_PY, "script", "spex", "-i", data_path(CLEAN), "-p", psf_path, "-o", out] + ARGS),
        "gpu_specter bin/spex",
    )
    assert re.search(r"INFO:spex\.py:\d+:read:Reading PSF: ", output), output
    assert_gpu_specters_frame(out, expected)


def test_gpu_specters_desi_benchmark_extract(tmp_path):
    """bin/desi_benchmark_extract --spex: one camera (r0, the clean image) of an exposure
    laid out as its input folder wants; spex extracts its 500 fibres, 5760-7620 A."""
    need("gpu_specter", "desispec", "desiutil", "desitarget", "specter")
    night, expid = "20201214", "00067784"
    indir, outdir = tmp_path / "in", tmp_path / "out"
    for folder, name, source in (("preproc", "preproc", CLEAN), ("exposures", "psf", PSF)):
        (indir / folder / night / expid).mkdir(parents=True)
        os.symlink(data_path(source), indir / folder / night / expid / f"{name}-r0-{expid}.fits")
    outdir.mkdir()
    output = check(
        run_python(
            [
                CLIENTS_PY,
                "script",
                "desi_benchmark_extract",
                str(indir),
                str(outdir),
                str(time.time()),
                "--spex",
                "--no-mpi",
                "--cameras",
                "r0",
                "--night",
                night,
                "--expid",
                expid,
                "--nsubbundles",
                "5",
                "--nwavestep",
                "50",
                "--pixpad-frac",
                "0.8",
                "--wavepad-frac",
                "0.2",
            ]
        ),
        "gpu_specter bin/desi_benchmark_extract",
    )
    assert "desi-extract 1 frames in" in output, output
    fits = pytest.importorskip("astropy.io.fits")
    with fits.open(outdir / f"frame-r0-{expid}.fits") as hdus:
        assert hdus["FLUX"].data.shape == (500, 2326) and hdus["FIBERMAP"].data is not None
        flux, ivar = hdus["FLUX"].data, hdus["IVAR"].data
        # The image has light (and ivar) on fibres 0-49, 5700-6820 A: bins 0-1324 of the grid.
        assert np.count_nonzero(ivar[:50, :1325] > 0) > 0.99 * 50 * 1325 and np.all(np.isfinite(flux))
    events = (outdir / f"events-{night}-{expid}.csv").read_text()
    assert "extracted-bundles" in events and "exposure-end" in events, events
