"""The clients' own code on perfex (gpu_specter aliased to perfex.gpu_specter): gpu_specter's
test_core.py and desispec's test_extract.py unchanged, desispec's desi_extract_spectra on the
reference image, gpu_specter's IO coordinators and io module side by side with perfex's.
Each runs `clients.py COMMAND` in a fresh process (under mpirun for several ranks) and skips
with a message when a client checkout ($PERFEX_CLIENTS, default ../clients) or a module it
needs is missing."""

import importlib.util
import os
import re
import sys

import numpy as np
import perfex
import pytest

import clients
from conftest import CLEAN, MASKED, data_path, mpirun, run_python

CLIENTS_PY = os.path.join(clients.HERE, "clients.py")
# desi_extract_spectra as production runs it (fibres 0-24 of the reference image).
PRODUCTION = [
    "-w",
    "5760,7620,0.8",
    "--psferr",
    "0.01",
    "--nsubbundles",
    "5",
    "--nwavestep",
    "50",
    "--no-gpu",
    "-s",
    "0",
    "-n",
    "25",
]
# perfex's frame mask differs from desispec's (desispec.scripts.extract.get_spectrum_mask) in
# two documented ways: NODATA where ivar is 0, and ALLBADPIX for any pixmask_fraction >= 1 -
# 1e-9 (a spot's pixels sum to 1 to rounding; desispec requires exactly 1.0).
ALLBADPIX, NODATA = 1 << 1, 1 << 8


def need(*names):
    """Skips unless each client is installed here (desispec, desiutil, desitarget from the
    package index) or checked out."""
    installed = [n for n in names if n in clients.FROM_INDEX and importlib.util.find_spec(n) is not None]
    missing = clients.missing_clients(*(n for n in names if n not in installed))
    if missing:
        indexed = [n for n in missing if n in clients.FROM_INDEX]
        pytest.skip(
            f"client checkout(s) {', '.join(missing)} not found in {clients.clients_root()} "
            "(set PERFEX_CLIENTS to the folder holding them)"
            + (f"; {', '.join(indexed)} not installed in {sys.prefix} either" if indexed else "")
        )


def check(result, what):
    """The run's combined output; skips when it reported a missing module."""
    output = result.stdout + result.stderr
    if result.returncode == clients.MISSING:
        pytest.skip(f"{what}: " + re.search(r"missing module .*", output).group(0))
    assert result.returncode == 0, output
    return output


def assert_clients_from_environment(output):
    """The desispec, desiutil and desitarget the run used are this environment's where it has
    them (CI's: the package index's), else the checkouts'."""
    for name in clients.FROM_INDEX:
        spec = importlib.util.find_spec(name)
        where = os.path.dirname(spec.origin) if spec is not None else os.path.join(clients.client_py(name), name)
        assert re.search(rf"^client {name} \S+ from {re.escape(where)}$", output, re.M), (name, where, output)


def specter_runs():
    """specter imports (its checkout plus numba and scipy), so test_core compares with it."""
    return clients.client_py("specter") is not None and all(
        importlib.util.find_spec(m) is not None for m in ("numba", "scipy")
    )


@pytest.fixture(scope="module")
def preproc_67784(tmp_path_factory):
    need("gpu_specter")
    pytest.importorskip("astropy", reason="the simulated preproc is written with astropy")
    psf = os.path.join(os.path.dirname(clients.client_py("gpu_specter")), clients.PSF_67784)
    return clients.simulate_preproc(psf, str(tmp_path_factory.mktemp("sim") / "preproc-r0-00067784.fits"))


@pytest.mark.parametrize("nranks", [1, pytest.param(2, marks=pytest.mark.mpi)])
def test_gpu_specter_test_core(nranks, preproc_67784):
    args = [CLIENTS_PY, "test-core", preproc_67784]
    output = check(run_python(args) if nranks == 1 else mpirun(nranks, args), "gpu_specter test_core")
    expected = {
        "test_extract_frame": "ok",
        "test_compare_specter": "ok" if specter_runs() else "skipped",
        "test_compare_gpu": "skipped",
        "test_gpu_batch_subbundle": "skipped",
    }
    for name, outcome in expected.items():
        got = re.findall(rf"^{name} \(.*\) \.\.\. (\w+)", output, re.M)
        assert got == [outcome] * nranks, (name, got, output)


def test_desispec_test_extract():
    need("desispec", "desiutil", "desitarget", "specter")
    output = check(run_python([CLIENTS_PY, "test-extract"]), "desispec test_extract")
    assert re.search(r"^Ran 5 tests", output, re.M) and re.search(r"^OK$", output, re.M), output
    assert "skipped" not in output, output
    assert_clients_from_environment(output)
    assert re.search(r"extract:  psf = \S*perfex/gpu_specter/test/data/psf-r0-00051060\.fits$", output, re.M)


def test_desispec_test_extract_with_drop_ins():
    """desispec's test_extract.py as a DESI environment without checkouts runs it: desispec,
    desiutil and desitarget installed, gpu_specter and specter both perfex's drop-ins."""
    if importlib.util.find_spec("perfex.specter") is None:
        pytest.skip("perfex.specter (the specter drop-in) is not in this perfex")
    need("desispec", "desiutil", "desitarget")
    output = check(run_python([CLIENTS_PY, "test-extract-drop-ins"]), "desispec test_extract with both drop-ins")
    assert re.search(r"^Ran 5 tests", output, re.M) and re.search(r"^OK$", output, re.M), output
    assert "skipped" not in output, output
    assert_clients_from_environment(output)
    assert re.search(r"^client specter perfex \S+ from \S*perfex/specter$", output, re.M), output


# specter's test PSFs that its checkout holds (public snapshots lack psf-spot.fits, psf-pix.fits
# and psf-monospot.fits: files over 4 MiB), the class of test_psf.py that reads each, and its format.
SPECTER_PSFS = {"psf-gausshermite.fits": "TestGaussHermitePSF", "psf-gausshermite2.fits": "TestGaussHermite2PSF"}
SPECTER_ABSENT = {"psf-spot.fits": "TestSpotPSF", "psf-pix.fits": "TestPixPSF", "psf-monospot.fits": "TestMonoSpotPSF"}


@pytest.mark.parametrize("psf", sorted(SPECTER_PSFS))
def test_specter_test_psf(psf):
    """specter's test_psf.py, unchanged, on perfex.specter: every test class, those whose PSF
    file the checkout lacks reading `psf` instead (the log says so). Passes but for specter's
    own expected failure (test_shift_xy), psf-gausshermite2.fits's CCD rows below its
    wavelength domain included (their spots extrapolated, as specter's)."""
    need("specter")
    if clients.missing_clients("specter") or not os.path.exists(
        os.path.join(clients.client_py("specter"), "specter", "test", "t", psf)
    ):
        pytest.skip(f"{psf} is not in specter's checkout")
    result = run_python([CLIENTS_PY, "specter-tests", psf, "test_psf"])
    output = result.stdout + result.stderr
    if result.returncode == clients.MISSING:
        pytest.skip("specter test_psf: " + re.search(r"missing module .*", output).group(0))
    assert re.search(r"^client specter perfex \S+ from \S*perfex/specter$", output, re.M), output
    results = re.findall(r"^(test\w+) \(specter_checkout_test_psf\.(\w+)\.\w+\) \.\.\. (.+)$", output, re.M)
    classes = {c for _, c, _ in results}
    assert classes == set(SPECTER_PSFS.values()) | set(SPECTER_ABSENT.values()), classes
    for name in SPECTER_ABSENT:
        assert f"{name} absent from the checkout: the test reads {psf}" in output or os.path.exists(
            os.path.join(clients.client_py("specter"), "specter", "test", "t", name)
        )
    for test, cls, outcome in results:
        # specter marks test_shift_xy an expected failure: its PSFs do not implement it
        expected = "expected failure" if test == "test_shift_xy" else "ok"
        assert outcome == expected, (test, cls, outcome, output)
    assert result.returncode == 0, output


# specter's test_extract.py and test_util.py on the checkout's PSFs (test_extract reads the absent
# psf-spot.fits and psf-pix.fits): the outcomes other than "ok", each with its reason.
SPECTER_EXTRACT_EXPECTED = {
    # test_ex2d asserts more than 13 resolution diagonals; specter's own rule (9 sigma of the
    # widest spot per bin) gives psf-gausshermite.fits 13 at 1 A bins: real specter fails alike.
    "psf-gausshermite.fits": {"test_ex2d": "FAIL"},
    # Real specter fails both alike on psf-gausshermite2.fits: test_ex2d's two ways of cutting
    # the frame differ by more than its 0.1 sigma (1.4 sigma with specter), and
    # test_wave_off_image's xyrange finds fibre 0 off the CCD at every wavelength it asks
    # (specter's xyrange takes min() of an empty sequence).
    "psf-gausshermite2.fits": {"test_ex2d": "FAIL", "test_wave_off_image": "ERROR"},
}


@pytest.mark.parametrize("psf", sorted(SPECTER_PSFS))
def test_specter_test_extract_and_util(psf):
    """specter's test_extract.py and test_util.py, unchanged, on perfex.specter, test_extract
    reading `psf` for its absent psf-spot.fits and psf-pix.fits: every test passes but
    SPECTER_EXTRACT_EXPECTED's."""
    need("specter")
    if clients.missing_clients("specter") or not os.path.exists(
        os.path.join(clients.client_py("specter"), "specter", "test", "t", psf)
    ):
        pytest.skip(f"{psf} is not in specter's checkout")
    result = run_python([CLIENTS_PY, "specter-tests", psf, "test_util", "test_extract"])
    output = result.stdout + result.stderr
    if result.returncode == clients.MISSING:
        pytest.skip("specter tests: " + re.search(r"missing module .*", output).group(0))
    assert re.search(r"^client specter perfex \S+ from \S*perfex/specter$", output, re.M), output
    results = dict(
        re.findall(r"^(\w+) \(specter_checkout_test_\w+\.\w+(?:\.\w+)?\)(?:\n.*)? \.\.\. (.+)$", output, re.M)
    )
    expected = SPECTER_EXTRACT_EXPECTED[psf]
    assert {t: o for t, o in results.items() if o != "ok"} == expected, output
    assert {"test_trapz", "test_timeit", "test_traceset"} <= set(results), output
    if "setUpClass" not in expected:
        assert {"test_ex2d_patch", "test_noiseless_ex2d", "test_ex1d", "test_psfbias"} <= set(results), output
    assert result.returncode == 1, output


@pytest.fixture(scope="module")
def desi_preproc(tmp_path_factory):
    need("desispec", "desiutil", "desitarget", "specter")
    return write_desi_preproc(tmp_path_factory)


def write_desi_preproc(tmp_path_factory):
    """The clean reference image with the cards desispec needs (RDNOISE for read_image,
    FLAVOR for write_frame), as desispec's own test images have."""
    fits = pytest.importorskip("astropy.io.fits", reason="desispec reads images with astropy")
    path = str(tmp_path_factory.mktemp("desi") / "preproc-r0.fits")
    with fits.open(data_path(CLEAN)) as hdus:
        hdus["IMAGE"].header["RDNOISE"] = (3.0, "[electron] read noise of the simulation")
        hdus["IMAGE"].header["FLAVOR"] = "science"
        hdus.writeto(path)
    return path


@pytest.fixture(scope="module")
def perfex_production(desi_preproc, psf):
    """perfex's own API with desi_extract_spectra's production settings."""
    return perfex.extract_frame(
        perfex.read_preproc(desi_preproc),
        psf=psf,
        wavelength="5760,7620,0.8",
        specmin=0,
        nspec=25,
        nsubbundles=5,
        nwavestep=50,
        psferr=0.01,
        progress=False,
    )


@pytest.mark.parametrize("nranks", [1, pytest.param(2, marks=pytest.mark.mpi)])
def test_desi_extract_spectra(nranks, desi_preproc, psf_path, perfex_production, tmp_path):
    fits = pytest.importorskip("astropy.io.fits")
    out = str(tmp_path / "frame-r0.fits")
    args = [CLIENTS_PY, "desi-extract", "-i", desi_preproc, "-p", psf_path, "-o", out] + PRODUCTION
    if nranks > 1:
        output = check(mpirun(nranks, args + ["--mpi"]), "desi_extract_spectra")
    else:
        output = check(run_python(args), "desi_extract_spectra")
    assert_clients_from_environment(output)
    # gpu_specter's INFO lines and timing splits, in its format, in desispec's log (rank 0's).
    version = f"perfex {perfex.__version__}"
    assert re.search(rf"INFO:core\.py:\d+:extract_frame:Extracting with {version} on", output), output
    assert f"Size of frame MPI comm: {nranks}" in output
    for split in ("init-mpi-comm", "extracted-bundles", "assembled-frame", "total"):
        assert re.search(rf"INFO:util\.py:\d+:log_splits: *{split}: +\d+\.\d\d\b", output), split
    with fits.open(out) as hdus:
        header = hdus["FLUX"].header
        names = {header[k]: k.replace("DEPNAM", "DEPVER") for k in header if k.startswith("DEPNAM")}
        assert header["SPECTER"] == version and header[names["gpu_specter"]] == version
        frame = {h: np.asarray(hdus[h].data) for h in ("FLUX", "IVAR", "MASK", "CHI2PIX", "RESOLUTION")}
        assert np.array_equal(hdus["WAVELENGTH"].data, perfex_production.wave)
    p = perfex_production
    for name, ours in (("FLUX", p.flux), ("IVAR", p.ivar), ("CHI2PIX", p.chi2pix), ("RESOLUTION", p.resolution)):
        assert np.array_equal(frame[name], ours.astype(np.float32)), name
    assert np.count_nonzero(p.ivar > 0) > 25 * 1000 and np.count_nonzero(p.ivar == 0) > 0  # beyond the image
    expected = p.mask & ~np.uint32(NODATA)
    rounded = (p.pixmask_fraction != 1.0) & (p.mask & ALLBADPIX != 0)
    expected[rounded] &= ~np.uint32(ALLBADPIX)
    assert np.array_equal(frame["MASK"], expected)
    assert np.count_nonzero(frame["MASK"] & ALLBADPIX) > 0 and np.count_nonzero(rounded) > 0


@pytest.mark.parametrize("nranks", [1, pytest.param(2, marks=pytest.mark.mpi)])
def test_desi_extract_spectra_use_specter_drop_ins(nranks, psf_path, tmp_path_factory, tmp_path):
    """desi_extract_spectra --use-specter (desispec's main_mpi: specter's ex2d per bundle of 5,
    dealt over the ranks, then merged) with both drop-ins and no checkout: the frame's flux and
    ivar are perfex.extract_frame's with the same options and specter's geometry, its resolution
    band that band cut to specter's width (to rounding: each of desispec's bundles is its own
    plan, whose padding is its own patches' largest)."""
    if importlib.util.find_spec("perfex.specter") is None:
        pytest.skip("perfex.specter (the specter drop-in) is not in this perfex")
    need("desispec", "desiutil", "desitarget")
    fits = pytest.importorskip("astropy.io.fits")
    preproc = write_desi_preproc(tmp_path_factory)
    out = str(tmp_path / "frame-r0.fits")
    options = ["-w", "5760,7620,0.8", "--psferr", "0.01", "--nsubbundles", "2", "--nwavestep", "50"]
    options += ["-s", "0", "-n", "10", "--bundlesize", "5", "--use-specter"]
    args = [CLIENTS_PY, "desi-extract-drop-ins", "-i", preproc, "-p", psf_path, "-o", out] + options
    run = mpirun(nranks, args + ["--mpi"]) if nranks > 1 else run_python(args)
    output = check(run, "desi_extract_spectra --use-specter with both drop-ins")
    assert_clients_from_environment(output)
    assert re.search(r"^client specter perfex \S+ from \S*perfex/specter$", output, re.M), output
    expected = perfex.extract_frame(
        perfex.read_preproc(preproc), psf=psf_path, wavelength="5760,7620,0.8", specmin=0, nspec=10,
        bundlesize=5, nsubbundles=2, nwavestep=50, psferr=0.01, geometry="specter", progress=False,
    )  # fmt: skip
    with fits.open(out) as hdus:
        assert hdus["FLUX"].header["SPECTER"] == f"perfex {perfex.__version__}"
        # Over ranks desispec merges the bundles' frames into one of 500 fibres (mergebundles).
        nfib = 10 if nranks == 1 else 500
        assert hdus["FLUX"].data.shape[0] == nfib and not np.any(hdus["IVAR"].data[10:])
        flux, ivar = hdus["FLUX"].data[:10], hdus["IVAR"].data[:10]
        band = np.asarray(hdus["RESOLUTION"].data[:10])
    assert np.all(ivar[expected.ivar > 0] > 0)
    np.testing.assert_allclose(ivar, expected.ivar, rtol=1e-5)
    assert np.max(np.abs(flux - expected.flux) * np.sqrt(expected.ivar)) < 1e-4  # float32 rounding
    ndiag, centre = (band.shape[1] - 1) // 2, expected.ndiag
    assert 0 < ndiag <= centre
    cut = expected.resolution[:, centre - ndiag : centre + ndiag + 1]
    np.testing.assert_allclose(band, cut, rtol=0, atol=1e-6)


def test_desi_extract_spectra_use_specter_against_specter(psf_path, tmp_path_factory, tmp_path):
    """desi_extract_spectra --use-specter with the specter drop-in against the same command with
    specter's checkout (one bundle of 5 fibres in 2 sub-bundles, 250 bins): the same frame to
    float32 rounding (flux in sigma, ivar, resolution band), and specter's model image (each
    patch's fit over its box, the later patches' over the earlier) to rounding."""
    if importlib.util.find_spec("perfex.specter") is None:
        pytest.skip("perfex.specter (the specter drop-in) is not in this perfex")
    need("desispec", "desiutil", "desitarget", "specter")
    fits = pytest.importorskip("astropy.io.fits")
    preproc = write_desi_preproc(tmp_path_factory)
    options = ["-w", "5760,5959.2,0.8", "--psferr", "0.01", "--nsubbundles", "2", "--nwavestep", "50"]
    options += ["-s", "0", "-n", "5", "--bundlesize", "5", "--use-specter"]
    frames = {}
    for command in ("desi-extract", "desi-extract-drop-ins"):
        out, model = str(tmp_path / f"{command}.fits"), str(tmp_path / f"{command}-model.fits")
        args = [CLIENTS_PY, command, "-i", preproc, "-p", psf_path, "-o", out, "-m", model]
        output = check(run_python(args + options), command)
        drop_in = re.search(r"^client specter perfex \S+ from \S*perfex/specter$", output, re.M)
        assert bool(drop_in) == (command == "desi-extract-drop-ins"), output
        with fits.open(out) as hdus:
            frames[command] = {name: np.asarray(hdus[name].data, np.float64) for name in ("FLUX", "IVAR", "RESOLUTION")}
        frames[command]["MODEL"] = fits.getdata(model).astype(np.float64)
    theirs, ours = frames["desi-extract"], frames["desi-extract-drop-ins"]
    assert np.count_nonzero(theirs["MODEL"]) > 10000
    np.testing.assert_allclose(ours["MODEL"], theirs["MODEL"], rtol=0, atol=1e-9 * np.abs(theirs["MODEL"]).max())
    assert np.all(theirs["IVAR"] > 0)
    np.testing.assert_allclose(ours["IVAR"], theirs["IVAR"], rtol=1e-5)
    assert np.max(np.abs(ours["FLUX"] - theirs["FLUX"]) * np.sqrt(theirs["IVAR"])) < 1e-4
    np.testing.assert_allclose(ours["RESOLUTION"], theirs["RESOLUTION"], rtol=0, atol=1e-6)


@pytest.mark.parametrize("nranks", [1, pytest.param(3, marks=pytest.mark.mpi)])
def test_io_coordinators_match_gpu_specter(nranks):
    need("gpu_specter")
    args = [CLIENTS_PY, "coordinators"]
    output = check(run_python(args) if nranks == 1 else mpirun(nranks, args), "IO coordinators")
    classes = ["NoMPIIOCoordinator", "SerialIOCoordinator"] + ["ParallelIOCoordinator"] * (nranks >= 3)
    for name in classes:
        assert len(re.findall(rf"^rank \d+ {name}: same results", output, re.M)) == nranks, output
    if nranks >= 3:  # the worker root returns the writer's payload, the writer what it wrote
        parallel = "ParallelIOCoordinator: same results"
        assert f"rank 2 {parallel} (('read', 0), ('processed', 2, 0), ('payload', 1))" in output
        written = "('written', 1, ('payload', 2))"
        assert f"rank 1 {parallel} (('dummy-read', 1), ('dummy-process', 1), {written})" in output


def test_io_matches_gpu_specter(tmp_path):
    need("gpu_specter")
    output = check(run_python([CLIENTS_PY, "io", data_path(MASKED), str(tmp_path)]), "gpu_specter.io")
    assert "read_img: same arrays and header cards" in output
    assert "write_frame / write_model / read_frame: the same files and dicts" in output
    assert len(re.findall(r"OSError from both", output)) == 4, output
    assert "io, core.extract_frame, util.get_logger: gpu_specter's signatures" in output
