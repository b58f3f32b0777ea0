"""The numpy API: against the C++ path, the gpu_specter references, zero-copy and converted
input, outputs, errors, logging, the GIL."""

import inspect
import logging
import os
import pickle
import re
import threading
import time

import numpy as np
import perfex
import perfex.collective
import perfex.logs
import perfex.mpi
import pytest
from perfex import _perfex

from conftest import (
    FRAME_ARRAYS,
    REFERENCE,
    assert_frames_identical,
    compare_with_reference,
    data_path,
    reference,
    run_python,
)

HOST_BACKENDS = [b for b in perfex.backends() if b != "cuda"]
QUICK = dict(wavelength="5760,6160,0.8", specmin=0, nspec=25, psferr=0.01)


@pytest.mark.parametrize("backend", HOST_BACKENDS)
def test_numpy_api_equals_cpp_path(masked, psf, psf_path, backend):
    """numpy arrays in, numpy out == read_preproc + extract_frame(CcdImage) all in C++."""
    frame = perfex.extract_frame(masked.pixels, masked.ivar, psf, backend=backend, progress=False, **QUICK)
    cpp = _perfex.testing.reference_extract(
        masked.path, psf_path, _perfex.options_from_dict(perfex.make_options(**QUICK)), backend
    )
    assert_frames_identical(frame, cpp)
    assert frame.npatches == cpp["npatches"] == 5 * 11
    assert frame.options == cpp["options"]


def test_numpy_api_equals_cpp_command_line(masked, psf, tmp_path):
    """The frame file written from Python == the C++ perfex-extract's (data, float32)."""
    exe = os.environ.get("PERFEX_EXTRACT_EXE")
    if not exe or not os.path.exists(exe):
        pytest.skip("perfex-extract not built (PERFEX_EXTRACT_EXE is set by CTest)")
    import subprocess

    out = tmp_path / "cpp.fits"
    subprocess.run(
        [
            exe,
            "-i",
            masked.path,
            "-p",
            psf.source,
            "-o",
            str(out),
            "-w",
            "5760,6160,0.8",
            "-s",
            "0",
            "-n",
            "25",
            "--psferr",
            "0.01",
            "--threads",
            "2",
        ],
        check=True,
        capture_output=True,
    )
    frame = perfex.extract_frame(masked.pixels, masked.ivar, psf, progress=False, **QUICK)
    perfex.write_frame(tmp_path / "py.fits", frame, masked.path, psf.source)
    assert_frames_identical(perfex.read_frame(out), perfex.read_frame(tmp_path / "py.fits"))


@pytest.mark.parametrize("image", ["sim-r0-b0-1", "sim-r0-b0-1-masked"])
def test_gpu_specter_reference(image, psf):
    """Within 1e-9 sigma of gpu_specter's extraction (DESI defaults, 50 fibres, 1251 wavelengths)."""
    ref = reference(image)
    pre = perfex.read_preproc(data_path(image + ".fits.gz"))
    frame = perfex.extract_frame(pre.pixels, pre.ivar, psf, progress=False, **REFERENCE)
    assert frame.npatches == 260 and frame.failed_patches == 0
    d = compare_with_reference(
        frame.flux, frame.ivar, frame.resolution, frame.chi2pix, frame.pixmask_fraction, frame.wave, ref
    )
    assert d["flux_sigma"] <= 1e-9, d
    assert d["ivar_rel"] <= 1e-8, d
    assert d["resolution_abs"] <= 1e-9, d
    assert d["chi2pix_rel"] <= 1e-8, d
    assert d["pixmask_abs"] <= 1e-9, d


# ---- input: in place or converted once -------------------------------------------------------


def test_zero_copy_input(masked, psf):
    pixels, ivar = masked.pixels, masked.ivar
    before = pixels[1000, 200], ivar[1000, 200]
    image = perfex.Image(pixels, ivar)
    assert image.in_place and not image.converted
    assert image.data_pointer == pixels.ctypes.data
    assert image._handle.ivar_address == ivar.ctypes.data
    assert image.pixels is pixels and image.ivar is ivar
    frame = perfex.extract_frame(image, psf=psf, progress=False, **QUICK)
    assert_frames_identical(frame, perfex.extract_frame(pixels, ivar, psf, progress=False, **QUICK))
    assert (pixels[1000, 200], ivar[1000, 200]) == before  # read only


@pytest.mark.parametrize("layout", ["float32", "fortran", "big-endian", "strided", "int"])
def test_converted_input(masked, psf, layout):
    """Other dtypes and layouts are converted once; results equal those of the same values as
    C-contiguous float64."""
    rows = slice(0, 2400)  # the image's signal lies in rows 194-2354
    if layout == "float32":
        p, w = masked.pixels[rows].astype(np.float32), masked.ivar[rows].astype(np.float32)
    elif layout == "fortran":
        p, w = np.asfortranarray(masked.pixels[rows]), np.asfortranarray(masked.ivar[rows])
    elif layout == "big-endian":
        p, w = masked.pixels[rows].astype(">f8"), masked.ivar[rows].astype(">f8")
    elif layout == "strided":
        p, w = masked.pixels[rows, :], masked.ivar[rows, :]
        p, w = np.repeat(p, 2, axis=1)[:, ::2], np.repeat(w, 2, axis=1)[:, ::2]
    else:
        p, w = np.round(masked.pixels[rows]).astype(np.int32), (masked.ivar[rows] > 0).astype(np.int64)
    image = perfex.Image(p, w)
    assert image.converted and not image.in_place
    assert image.pixels.dtype == np.float64 and image.pixels.flags.c_contiguous
    expected = perfex.Image(np.array(p, dtype=np.float64, order="C"), np.array(w, dtype=np.float64, order="C"))
    assert expected.in_place
    # Rows 0-2399 of the CCD: allowed explicitly (an image that is not the PSF's CCD is refused).
    assert_frames_identical(
        perfex.extract_frame(image, psf=psf, progress=False, allow_image_size_mismatch=True, **QUICK),
        perfex.extract_frame(expected, psf=psf, progress=False, allow_image_size_mismatch=True, **QUICK),
    )


def test_float32_preproc_values(masked, psf):
    """A preproc file holds float32: converting those values gives the file's frame exactly."""
    p32, w32 = masked.pixels.astype(np.float32), masked.ivar.astype(np.float32)
    assert np.array_equal(p32.astype(np.float64), masked.pixels)  # the file's values are float32
    assert_frames_identical(
        perfex.extract_frame(p32, w32, psf, progress=False, **QUICK),
        perfex.extract_frame(masked.pixels, masked.ivar, psf, progress=False, **QUICK),
    )


def test_one_default_mask(masked):
    """read_preproc's default MASK bits are the library's (desispec's 0x2FF: bit 8 does not
    mask), and they mask as given explicitly."""
    assert _perfex.DEFAULT_MASK_BITS == 0x2FF
    assert inspect.signature(perfex.read_preproc).parameters["mask_bits"].default == _perfex.DEFAULT_MASK_BITS
    again = perfex.read_preproc(masked.path, _perfex.DEFAULT_MASK_BITS)
    assert np.array_equal(again.ivar, masked.ivar) and again.masked_pixels == masked.masked_pixels


def test_nonfinite_pixels_are_masked(masked, psf):
    p, w = masked.pixels.copy(), masked.ivar.copy()
    p[900, 150], p[901, 151], w[902, 152] = np.nan, np.inf, np.nan
    image = perfex.Image(p, w)
    assert not image.in_place and image.nonfinite_pixels == 3
    frame = perfex.extract_frame(image, psf=psf, progress=False, **QUICK)
    assert frame.nonfinite_pixels == 3
    assert any("3 NaN/Inf" in m for m in frame.warnings)
    for r, c in ((900, 150), (901, 151), (902, 152)):
        p[r, c], w[r, c] = 0.0, 0.0
    assert_frames_identical(frame, perfex.extract_frame(p, w, psf, progress=False, **QUICK))


def test_extract_frame_signature_names_its_keywords_and_defaults():
    parameters = inspect.signature(perfex.extract_frame).parameters
    assert list(parameters)[:4] == ["image", "ivar", "psf", "comm"]
    assert parameters["backend"].default is None and parameters["log_warnings"].default is True
    assert parameters["allow_image_size_mismatch"].default is False and "job" not in parameters
    assert list(parameters)[-1] == "options"


def test_only_the_pixels_the_patches_read_are_checked(masked, psf):
    """An extraction reads, checks and copies only its pixel box, as perfex-extract reads only
    that box of the file: NaN pixels and a negative ivar outside it change nothing, NaN pixels
    inside are counted alone and masked in a copy of the box."""
    perfex.initialize()
    job = perfex.extraction.check_job(psf, masked.pixels.shape, backend="serial", **QUICK)
    row0, row1, col0, col1 = job.pixel_box()
    clean = perfex.extract_frame(masked.pixels, masked.ivar, psf, progress=False, **QUICK)
    p, w = masked.pixels.copy(), masked.ivar.copy()
    p[row0 - 1, col0], p[row1, col1 - 1], w[row0, col1] = np.nan, np.inf, -1.0
    outside = perfex.extract_frame(p, w, psf, progress=False, **QUICK)
    assert outside.nonfinite_pixels == 0 and not any("NaN/Inf" in m for m in outside.warnings)
    assert_frames_identical(outside, clean)
    with pytest.raises(perfex.Error, match=f"negative inverse variance -1.0* at row {row0}, column {col1}"):
        perfex.Image(p, w)  # built to be kept: every pixel checked now
    r, c = (row0 + row1) // 2, (col0 + col1) // 2
    p[r, c] = np.nan
    inside = perfex.extract_frame(p, w, psf, progress=False, **QUICK)
    assert inside.nonfinite_pixels == 1
    p[r, c], w[r, c] = 0.0, 0.0
    assert_frames_identical(inside, perfex.extract_frame(p, w, psf, progress=False, **QUICK))


def test_outputs_own_their_memory(small_frame):
    for name in FRAME_ARRAYS:
        a = getattr(small_frame, name)
        assert type(a.base).__name__ == "PyCapsule", name  # the C++ vector itself, not a copy
        assert a.flags.c_contiguous and a.flags.writeable
    assert small_frame.flux.shape == (60, 501) and small_frame.resolution.shape == (60, 11, 501)
    assert small_frame.mask.dtype == np.uint32
    assert list(small_frame.fibers) == list(range(5, 65))


# ---- errors ----------------------------------------------------------------------------------


def test_error_is_runtime_error():
    assert issubclass(perfex.Error, RuntimeError)


def test_negative_ivar(masked, psf):
    """A negative ivar among the pixels the patches read (rows 335-1181, columns 113-303)."""
    w = masked.ivar.copy()
    w[800, 200] = -1.0
    with pytest.raises(perfex.Error, match=r"negative inverse variance -1\.0+ at row 800, column 200"):
        perfex.extract_frame(masked.pixels, w, psf, progress=False, **QUICK)


@pytest.mark.parametrize(
    "pixels, ivar, error, match",
    [
        (np.zeros((10, 12)), np.zeros((10, 11)), perfex.Error, r"one shape, got \(10, 12\) and \(10, 11\)"),
        (np.zeros(10), np.zeros(10), perfex.Error, r"2-D arrays of one shape, got \(10,\)"),
        (np.zeros(10, dtype=np.float32), np.zeros(10), perfex.Error, "pixels must be a 2-D"),
        (np.zeros((0, 5)), np.zeros((0, 5)), perfex.Error, "nrows x ncols"),
        (np.zeros((4, 4), dtype=complex), np.zeros((4, 4)), TypeError, "real numeric array"),
        (np.array([["a"]]), np.zeros((1, 1)), TypeError, "real numeric array"),
        ([[1.0, 2.0], [3.0]], np.zeros((2, 2)), TypeError, "not an array"),
        (np.zeros((4, 4)), None, TypeError, "ivar"),
    ],
)
def test_bad_images(psf, pixels, ivar, error, match):
    with pytest.raises(error, match=match):
        perfex.extract_frame(pixels, ivar, psf, progress=False, **QUICK)


@pytest.mark.parametrize(
    "options, error, match",
    [
        (dict(nspec=0), perfex.RequestError, "nspec must be >= 1"),
        (dict(specmin=490, nspec=20), perfex.RequestError, r"specmin, nspec: fibres 490-509 .* the PSF has 500 fibres"),
        (dict(wavelength="6000,5000,0.8"), perfex.RequestError, "wavelength grid"),
        (dict(wavelength="a,b"), perfex.RequestError, "wavelength: expected"),
        (dict(pixpad_frac=2.0), perfex.RequestError, "pixpad_frac"),
        (dict(row_min=100, row_max=100), perfex.RequestError, "row_min, row_max must be"),
        (dict(decorrelation="full"), perfex.RequestError, "'signal' or 'noise'"),
        (dict(nspce=5), TypeError, "unknown extraction option.*nspce"),
        (dict(nsubbundle=2), TypeError, r"option\(s\) nsubbundle \(did you mean nsubbundles\?\); known"),
        (dict(frobnicate=2), TypeError, r"option\(s\) frobnicate; known: wavelength, "),
        (dict(nspec="five"), perfex.RequestError, "nspec: cannot convert"),
        (dict(nspec=5.5), perfex.RequestError, "nspec: cannot convert"),
        (dict(backend="vulkan"), perfex.RequestError, "backend: 'vulkan' is not one of"),
    ],
)
def test_bad_options(masked, psf, options, error, match):
    with pytest.raises(error, match=match):
        perfex.extract_frame(masked.pixels, masked.ivar, psf, progress=False, **dict(QUICK, **options))


def test_bad_files(tmp_path, psf, small_frame):
    with pytest.raises(perfex.Error, match="no-such-psf.fits"):
        perfex.read_psf(tmp_path / "no-such-psf.fits")
    junk = tmp_path / "junk.fits"
    junk.write_text("not a FITS file\n" * 100)
    with pytest.raises(perfex.Error, match="junk.fits"):
        perfex.read_preproc(junk)
    with pytest.raises(perfex.Error, match="junk.fits"):
        perfex.extract_frame(np.zeros((4, 4)), np.zeros((4, 4)), str(junk), progress=False)
    with pytest.raises(TypeError, match="psf"):
        perfex.extract_frame(np.zeros((4, 4)), np.zeros((4, 4)), 42, progress=False)
    with pytest.raises(perfex.Error, match="no-such-folder"):
        perfex.write_frame(tmp_path / "no-such-folder" / "f.fits", small_frame)
    with pytest.raises(perfex.Error, match="no model image"):
        perfex.write_model(tmp_path / "m.fits", small_frame)


def test_progress_callback_error_propagates(masked, psf):
    def fail(done, total):
        raise ValueError(f"stop at {done}/{total}")

    with pytest.raises(ValueError, match="stop at"):
        perfex.extract_frame(masked.pixels, masked.ivar, psf, progress=fail, **dict(QUICK, batch_patches=5))
    # The runtime is intact afterwards.
    frame = perfex.extract_frame(masked.pixels, masked.ivar, psf, progress=False, **QUICK)
    assert frame.npatches == 55


def test_threads_later_warns():
    threads = perfex.initialize()
    with pytest.warns(UserWarning, match="already runs"):
        perfex.initialize(threads + 1)
    r = run_python(["-c", "import perfex; perfex.initialize(0)"])
    assert r.returncode != 0 and "threads must be a positive integer" in r.stderr


def test_bad_input_does_not_crash_the_interpreter(tmp_path):
    """The same errors from a fresh interpreter: Python exceptions, exit status 0."""
    script = (
        "import numpy as np, perfex\n"
        "for bad in (lambda: perfex.extract_frame(np.zeros((3, 3)), -np.ones((3, 3)), 'x.fits'),\n"
        "            lambda: perfex.Image(np.zeros((3, 3)), -np.ones((3, 3))),\n"
        "            lambda: perfex.read_preproc('/nonexistent.fits'),\n"
        "            lambda: perfex.Image(np.zeros((2, 2)), np.zeros((3, 3)))):\n"
        "    try:\n        bad()\n    except (perfex.Error, TypeError) as e:\n        print('ok', e)\n"
    )
    r = run_python(["-c", script])
    assert r.returncode == 0, r.stderr
    assert r.stdout.count("ok ") == 4, r.stdout


# ---- logging, GIL, pickling, model ---------------------------------------------------------


def test_progress_goes_to_logging(masked, psf, caplog):
    name = perfex.logs.get_logger().name  # desiutil's where it is installed
    with caplog.at_level(logging.INFO, logger=name):
        perfex.extract_frame(masked.pixels, masked.ivar, psf, **dict(QUICK, batch_patches=10))
    lines = [r.getMessage() for r in caplog.records if r.name == name]
    assert any("55/55 patches (100 %)" in m for m in lines), lines
    assert 2 <= len(lines) <= 11


def test_gil_released_while_extracting(masked, psf):
    done = threading.Event()
    result = {}

    def work():  # from another Python thread: perfex drives Kokkos from its own thread
        try:
            result["frame"] = perfex.extract_frame(masked.pixels, masked.ivar, psf, progress=False, **QUICK)
        finally:
            done.set()

    thread = threading.Thread(target=work)
    ticks = 0
    thread.start()
    time.sleep(0.05)
    while not done.is_set():
        ticks += 1  # runs only while the extraction does not hold the GIL
        time.sleep(0.001)
    thread.join()
    assert result["frame"].npatches == 55
    assert ticks > 20


def test_ctrl_c_stops_an_extraction(psf_path):
    """SIGINT during an extraction: KeyboardInterrupt at the next batch; the runtime goes on."""
    import signal
    import subprocess
    import sys

    from conftest import python_env

    script = f"""
import signal, sys, numpy as np, perfex
signal.signal(signal.SIGINT, signal.default_int_handler)
psf = perfex.read_psf({psf_path!r})
pixels, ivar = np.zeros((4128, 4114)), np.ones((4128, 4114))
def started(done, total):
    if done == 10:
        print("started", flush=True)
try:
    perfex.extract_frame(pixels, ivar, psf, nspec=50, batch_patches=10, progress=started)
    print("not interrupted")
except KeyboardInterrupt:
    print("interrupted", flush=True)
frame = perfex.extract_frame(pixels, ivar, psf, nspec=5, wavelength="5760,5800,0.8", progress=False)
print("afterwards", frame.npatches)
"""
    p = subprocess.Popen(
        [sys.executable, "-c", script],
        env=python_env(OMP_NUM_THREADS="1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert p.stdout.readline().strip() == "started"
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=600)
    assert p.returncode == 0, err
    assert out.split() == ["interrupted", "afterwards", "10"]


def test_psf_pickles(psf, masked):
    copy = pickle.loads(pickle.dumps(psf))
    assert copy.nfib == psf.nfib and copy.param_names == psf.param_names
    a, b = psf.to_dict(), copy.to_dict()
    for k in a:
        assert np.array_equal(a[k], b[k]) if isinstance(a[k], np.ndarray) else a[k] == b[k], k
    assert_frames_identical(
        perfex.extract_frame(masked, psf=copy, progress=False, **QUICK),
        perfex.extract_frame(masked, psf=psf, progress=False, **QUICK),
    )


def test_model_image_and_file_round_trip(masked, psf, tmp_path):
    frame = perfex.extract_frame(masked, psf=psf, progress=False, model_image=True, **QUICK)
    assert frame.model.shape == masked.pixels.shape
    assert frame.model.sum() > 0
    perfex.write_frame(tmp_path / "f.fits", frame, masked.path, psf.source)
    perfex.write_model(tmp_path / "m.fits", frame, masked.path, psf.source)
    back = perfex.read_frame(tmp_path / "f.fits")
    for name in ("flux", "ivar", "resolution", "chi2pix", "pixmask_fraction"):
        assert np.array_equal(getattr(back, name), getattr(frame, name).astype(np.float32)), name
    assert np.array_equal(back.mask, frame.mask) and np.array_equal(back.wave, frame.wave)
    assert back.options == frame.options and back.specmin == 0


def test_closest_name_and_unknown_option_dict():
    assert _perfex.closest_name("nsubbundle", ["nspec", "nsubbundles"]) == "nsubbundles"
    assert _perfex.closest_name("frobnicate", ["nspec", "nsubbundles"]) == ""
    near = r"option\(s\) nsubbundle \(did you mean nsubbundles\?\), wavelengt \(did you mean wavelength\?\); known"
    with pytest.raises(TypeError, match=near):
        perfex.options.make_options(nsubbundle=2, wavelengt="5760,5800,0.8")
    with pytest.raises(
        perfex.RequestError, match=r"unknown extraction option 'wavepad_fra' \(did you mean 'wavepad_frac'\?\)"
    ):
        _perfex.options_from_dict({"wavepad_fra": 0.2})


def test_version_info():
    info = _perfex.version_info()
    assert info["perfex"] == perfex.__version__
    assert re.fullmatch(r"\d+\.\d+\.\d+", info["kokkos"])
    assert info["backends"] == perfex.backends() and info["backends"][0] == perfex.default_backend()


def test_frame_and_model_record_dependencies(tmp_path):
    depend = pytest.importorskip("desiutil.depend", reason="desiutil reads the DEPNAMnn/DEPVERnn cards")
    fits = pytest.importorskip("astropy.io.fits")
    nspec, nwave = 2, 5
    frame = perfex.Frame(
        **{name: np.ones((nspec, nwave)) for name in ("flux", "ivar", "chi2pix", "pixmask_fraction")},
        mask=np.zeros((nspec, nwave), np.uint32),
        wave=np.linspace(5760, 5763.2, nwave),
        resolution=np.ones((nspec, 3, nwave)),
        model=np.ones((4, 3)),
    )
    perfex.write_frame(tmp_path / "f.fits", frame)
    perfex.write_model(tmp_path / "m.fits", frame)
    for path, extname in ((tmp_path / "f.fits", "FLUX"), (tmp_path / "m.fits", "MODEL")):
        header = fits.getheader(path, extname)
        assert depend.getdep(header, "perfex") == perfex.__version__ == header["PERFEX"]
        assert depend.getdep(header, "kokkos") == _perfex.version_info()["kokkos"]
        assert depend.getdep(header, "numpy") == np.__version__
        assert [name for name, _ in depend.iterdep(header)] == ["perfex", "kokkos", "numpy"]


def test_threads_per_rank(monkeypatch):
    """Ranks x threads never oversubscribe a node: OMP_NUM_THREADS, else the node's cores
    shared among its ranks (the launcher's count), never more than the rank may run on."""
    from perfex.runtime import rank_threads

    for var in ("OMP_NUM_THREADS", "OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE"):
        monkeypatch.delenv(var, raising=False)
    assert rank_threads() is None  # one process: Kokkos' default, every core
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)))
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "4")
    assert rank_threads() == 16
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3})  # bound to one core
    assert rank_threads() == 1
    monkeypatch.setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "128")
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)))
    assert rank_threads() == 1
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    assert rank_threads() is None  # Kokkos reads it (capped at 512 with a warning)


def test_patches_dealt_evenly(psf):
    """perfex.mpi deals a 500-fibre r frame's patches by their flops: for any rank count up to
    40 the busiest rank has at most 10 % more work than the mean."""
    perfex.initialize()
    job = perfex.extraction.check_job(
        psf, (psf.npix_y, psf.npix_x), backend="serial", wavelength="5760,7620,0.8", psferr=0.01
    )
    flops = np.asarray(job.flops)
    assert job.npatches == 4700 and flops.size == 4700
    for size in range(1, 41):
        starts = perfex.collective.deal(flops, size)
        assert starts[0] == 0 and starts[-1] == 4700 and all(a <= b for a, b in zip(starts, starts[1:]))
        loads = np.array([flops[a:b].sum() for a, b in zip(starts, starts[1:])])
        assert loads.max() <= 1.1 * loads.mean(), (size, loads.max() / loads.mean())
        # As extract_frame deals them: rank 0 takes less by its own share of the frame's work.
        starts = perfex.collective.deal(flops, size, perfex.mpi.ROOT_OVERHEAD)
        loads = np.array([flops[a:b].sum() for a, b in zip(starts, starts[1:])]) / flops.sum()
        if size > 1:
            workers = loads[1:]
            assert workers.max() <= 1.1 * workers.mean(), (size, workers.max() / workers.mean())
            expected = max(0.0, 1 / size - perfex.mpi.ROOT_OVERHEAD)
            assert abs(loads[0] - expected) <= 0.01, (size, loads[0], expected)
    starts = perfex.collective.deal([1.0, 1.0], 5)  # more ranks than patches: some get none
    assert starts[0] == 0 and starts[-1] == 2 and sorted(starts) == starts


def test_model_image_is_gpu_specters(clean, psf):
    """The model image of the reference extraction is gpu_specter's to rounding, the red end
    included: the grid's 1251 bins are not a multiple of nwavestep, and gpu_specter's last patch
    of each sub-bundle models its whole 50-bin core, 49 bins beyond the grid."""
    fits = pytest.importorskip("astropy.io.fits", reason="astropy reads the reference files")
    with fits.open(data_path("ref-gpuspecter-sim-r0-b0-1-model.fits")) as hdus:
        hdu = next(h for h in hdus if h.data is not None)
        cut = np.asarray(hdu.data, dtype=np.float64)
        y0, x0 = int(hdu.header["Y0"]), int(hdu.header["X0"])
    ref = np.zeros((psf.npix_y, psf.npix_x))  # the cutout on the CCD, zero outside
    ref[y0 : y0 + cut.shape[0], x0 : x0 + cut.shape[1]] = cut
    frame = perfex.extract_frame(clean, psf=psf, progress=False, model_image=True, **REFERENCE)
    assert frame.model.shape == ref.shape
    diff = np.abs(frame.model - ref)
    assert diff.max() <= 1e-9 * ref.max(), (diff.max(), np.unravel_index(diff.argmax(), diff.shape))
    assert ref[2179:2284, :300].max() > 50  # the red end, where the extra core bins land
