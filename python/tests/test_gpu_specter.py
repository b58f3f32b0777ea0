"""perfex.gpu_specter: gpu_specter.core.extract_frame's arguments, keys, shapes and values; the
alias, the version, the logs; gpu_specter.io's readers and writers; the IO coordinators."""

import inspect
import logging
import re

import numpy as np
import perfex
import pytest
from perfex import gpu_specter

from conftest import compare_with_reference, data_path, reference, run_python

KEYS = {"specflux", "specivar", "specmask", "wave", "Rdiags", "pixmask_fraction", "chi2pix", "modelimage"}
# gpu_specter's timing keys, in the order of its stages.
TIMING = [
    "init-mpi-comm",
    "init-mpi-bcast",
    "host-to-device",
    "extracted-bundles",
    "staged-bundles",
    "merged-bundles",
    "assembled-frame",
]


def test_signature_is_gpu_specters():
    params = inspect.signature(gpu_specter.extract_frame).parameters
    expected = [
        ("img", inspect.Parameter.empty),
        ("psf", inspect.Parameter.empty),
        ("bundlesize", inspect.Parameter.empty),
        ("specmin", inspect.Parameter.empty),
        ("nspec", inspect.Parameter.empty),
        ("wavelength", None),
        ("nwavestep", 50),
        ("nsubbundles", 1),
        ("model", None),
        ("regularize", 0),
        ("psferr", None),
        ("comm", None),
        ("gpu", None),
        ("loglevel", None),
        ("timing", None),
        ("wavepad", 10),
        ("pixpad_frac", 0.8),
        ("wavepad_frac", 0.2),
        ("batch_subbundle", True),
        ("ranks_per_bundle", None),
    ]
    assert [(n, p.default) for n, p in params.items()] == expected
    assert gpu_specter.core.extract_frame is gpu_specter.extract_frame
    assert gpu_specter.__version__ == f"perfex {perfex.__version__}"


@pytest.fixture(scope="module")
def psf_tables(psf_path):
    pytest.importorskip("astropy", reason="gpu_specter's PSF dict holds astropy Tables")
    return gpu_specter.io.read_psf(psf_path)


def test_psf_tables_convert_exactly(psf_tables, psf):
    assert set(psf_tables) == {"PSF", "XTRACE", "YTRACE"}
    assert psf_tables["PSF"].meta["PSFERR"] == 0.01  # absent in the file: gpu_specter's default
    converted = gpu_specter.io.psf_from_tables(psf_tables).to_dict()
    original = psf.to_dict()
    for key, value in original.items():
        if key in ("source", "origin", "params_at", "xtrace_at", "ytrace_at"):  # names for messages
            continue
        if isinstance(value, np.ndarray):
            assert np.array_equal(converted[key], value), key
        else:
            assert converted[key] == value, key


def test_drop_in_against_reference(masked, psf_tables):
    """desispec's call (mask-applied ivar, CLI defaults) on the masked image."""
    ref = reference("sim-r0-b0-1-masked")
    img = {"image": masked.pixels, "ivar": masked.ivar, "fibermap": None, "meta": {}}
    timing = {}
    out = gpu_specter.core.extract_frame(
        img,
        psf_tables,
        25,
        0,
        50,
        "5760,6760,0.8",
        50,
        5,
        None,
        0.0,
        0.01,
        None,
        False,
        loglevel=None,
        timing=timing,
        wavepad_frac=0.2,
        pixpad_frac=0.8,
    )
    assert set(out) == KEYS
    assert out["specflux"].shape == out["specivar"].shape == out["chi2pix"].shape == (50, 1251)
    assert out["pixmask_fraction"].shape == out["specmask"].shape == (50, 1251)
    assert out["Rdiags"].shape == (50, 11, 1251) and out["wave"].shape == (1251,)
    assert out["modelimage"] is None
    assert out["specmask"].dtype == np.dtype(int)
    assert np.array_equal(out["specmask"], (out["specivar"] == 0).astype(int))
    d = compare_with_reference(
        out["specflux"], out["specivar"], out["Rdiags"], out["chi2pix"], out["pixmask_fraction"], out["wave"], ref
    )
    assert d["flux_sigma"] <= 1e-9 and d["ivar_rel"] <= 1e-8 and d["resolution_abs"] <= 1e-9, d
    assert list(timing) == TIMING and all(timing[a] <= timing[b] for a, b in zip(TIMING, TIMING[1:]))


def test_psf_forms_and_grids_agree(masked, psf, psf_path, psf_tables):
    img = {"image": masked.pixels, "ivar": masked.ivar}
    common = dict(nsubbundles=5, psferr=0.01)
    a = gpu_specter.extract_frame(img, psf_tables, 25, 25, 10, "5760,6000,0.8", **common)
    b = gpu_specter.extract_frame(img, psf_path, 25, 25, 10, (5760.0, 6000.0, 0.8), **common)
    c = gpu_specter.extract_frame(img, psf, 25, 25, 10, np.arange(5760.0, 6000.0 + 0.4, 0.8), **common)
    for key in KEYS - {"modelimage"}:
        assert np.array_equal(a[key], b[key]), key
    # An array grid: padded with dw = gradient(wave)[0] = 0.8000000000001819, as gpu_specter
    # does; the same grid, results equal to rounding.
    assert np.array_equal(c["wave"], a["wave"])
    assert np.max(np.abs(c["specflux"] - a["specflux"]) * np.sqrt(a["specivar"])) < 1e-9
    frame = perfex.extract_frame(
        masked, psf=psf, wavelength="5760,6000,0.8", specmin=25, nspec=10, progress=False, **common
    )
    assert np.array_equal(a["specflux"], frame.flux) and np.array_equal(a["Rdiags"], frame.resolution)


def test_function_defaults(masked, psf):
    """wavelength None: the PSF's WAVEMIN..WAVEMAX in steps of 0.8; nsubbundles 1; model."""
    img = {"image": masked.pixels, "ivar": masked.ivar}
    out = gpu_specter.extract_frame(img, psf, 25, 20, 5, model=True)
    assert out["wave"][0] == psf.wavemin == 5543.0
    assert out["wave"].size == np.arange(5543.0, 7827.0 + 0.4, 0.8).size
    assert out["specflux"].shape == (5, out["wave"].size)
    assert out["modelimage"].shape == masked.pixels.shape
    one = perfex.extract_frame(
        masked, psf=psf, specmin=20, nspec=5, nsubbundles=1, wavelength="5543,7827,0.8", progress=False
    )
    assert np.array_equal(out["specflux"], one.flux)


def test_bad_arguments(psf):
    with pytest.raises(perfex.Error, match="'image' and 'ivar'"):
        gpu_specter.extract_frame({"image": np.zeros((4, 4))}, psf, 25, 0, 25)
    with pytest.raises(perfex.Error, match="uniform grids"):
        gpu_specter.extract_frame(
            {"image": np.zeros((4, 4)), "ivar": np.zeros((4, 4))},
            psf,
            25,
            0,
            25,
            wavelength=np.array([5760.0, 5761.0, 5763.0]),
        )
    with pytest.raises(perfex.Error, match="has no YTRACE"):
        gpu_specter.io.psf_from_tables({"PSF": None, "XTRACE": None})


# ---- the alias, provenance, logging -----------------------------------------------------------

ALIAS_CHECK = r"""
import hashlib, importlib.resources, sys, types
import perfex, perfex.gpu_specter as g
sys.modules["gpu_specter"] = types.ModuleType("gpu_specter")  # another gpu_specter imported first
try:
    g.install_alias()
    raise AssertionError("install_alias replaced an imported gpu_specter")
except perfex.Error as e:
    assert "already imported" in str(e), e
del sys.modules["gpu_specter"]
names = g.install_alias()
assert g.install_alias() == names
import gpu_specter, gpu_specter.core, gpu_specter.io, gpu_specter.mpi, gpu_specter.spex, gpu_specter.util
assert (gpu_specter, gpu_specter.core, gpu_specter.io, gpu_specter.mpi, gpu_specter.spex, gpu_specter.util) == (
    g, g.core, g.io, g.mpi, g.spex, g.util)
try:
    import gpu_specter.extract
    raise AssertionError("gpu_specter.extract imported")
except ModuleNotFoundError:
    pass
psf = importlib.resources.files("gpu_specter") / "test/data/psf-r0-00051060.fits"
print(" ".join(names), gpu_specter.__version__, hashlib.sha256(psf.read_bytes()).hexdigest())
"""


def test_install_alias():
    r = run_python(["-c", ALIAS_CHECK])
    assert r.returncode == 0, r.stdout + r.stderr
    names, version, sha256 = r.stdout.split()[:6], " ".join(r.stdout.split()[6:8]), r.stdout.split()[8]
    assert names == ["gpu_specter"] + [f"gpu_specter.{m}" for m in ("core", "io", "mpi", "spex", "util")]
    assert version == f"perfex {perfex.__version__}"
    assert sha256 == "0d628c9236d9ac3ef46adb14ca8a5058ec442eeab261ad786979e65010d61406"


def test_get_logger_is_gpu_specters():
    info = gpu_specter.util.get_logger("info")
    assert info.name == "desimeter.INFO" and info.level == logging.INFO
    # Its own stderr handler in gpu_specter's format, once (the tests add caplog's), and no second
    # print through the root logger.
    fmt = "%(levelname)s:%(filename)s:%(lineno)s:%(funcName)s:%(message)s"
    own = [h for h in info.handlers if h.formatter is not None and h.formatter._fmt == fmt]
    assert gpu_specter.util.get_logger("INFO") is info and len(own) == 1 and not info.propagate
    assert gpu_specter.util.get_logger("WARN").level == logging.WARNING
    assert gpu_specter.util.get_logger("fatal").level == logging.CRITICAL
    with pytest.raises(ValueError, match="Unknown log level LOUD"):
        gpu_specter.util.get_logger("loud")


def test_log_lines_and_timing_splits(masked, psf, caplog):
    img = {"image": masked.pixels, "ivar": masked.ivar}
    caplog.set_level(logging.DEBUG)
    timing = {}
    gpu_specter.extract_frame(img, psf, 25, 0, 5, "5760,5800,0.8", nsubbundles=5, loglevel="INFO", timing=timing)
    lines = [r.getMessage() for r in caplog.records if r.name == "desimeter.INFO"]
    backend = perfex.default_backend(gpu=False)
    assert lines[:4] == [
        f"Extracting with perfex {perfex.__version__} on its {backend} backend",
        "Using GPU: False",
        "Size of frame MPI comm: 1",
        "Size of bundle MPI comm: 1",
    ]
    assert "Extracting wavelengths 5760.0,5800.0,0.8" in lines
    assert "Padding patches with 12 wave bins on both ends" in lines
    splits = {name.strip(): value for name, value in (line.split(":", 1) for line in lines[-8:])}
    assert list(splits) == [
        "start",
        "init-mpi-comm",
        "mpi-bcast-raw",
        "extracted-bundles",
        "staged-bundles",
        "merged-bundles",
        "assembled-frame",
        "total",
    ]
    steps = [float(splits[name]) for name in list(splits)[1:-1]]
    assert float(splits["total"]) == pytest.approx(sum(steps), abs=0.03) and min(steps) >= 0
    caplog.clear()
    gpu_specter.extract_frame(img, psf, 25, 0, 5, "5760,5800,0.8", nsubbundles=5, loglevel="WARN")
    assert not [r for r in caplog.records if r.name.startswith("desimeter.")]
    with pytest.raises(ValueError, match="Unknown log level"):
        gpu_specter.extract_frame(img, psf, 25, 0, 5, "5760,5800,0.8", loglevel="chatty")


def test_nan_pixels_are_masked_with_a_warning(clean, psf, caplog):
    pixels = clean.pixels.copy()
    pixels[453, 208] = np.nan  # on fibre 12's trace at 5810 A, ivar > 0 (gpu_specter: ValueError)
    assert clean.ivar[453, 208] > 0
    caplog.set_level(logging.WARNING)
    out = gpu_specter.extract_frame(
        {"image": pixels, "ivar": clean.ivar},
        psf,
        25,
        10,
        5,
        "5760,5860,0.8",
        nsubbundles=5,
        psferr=0.01,
        loglevel="WARNING",
    )
    warnings = [r.getMessage() for r in caplog.records if r.name == "desimeter.WARNING"]
    assert warnings == [
        "1 NaN/Inf image or ivar pixels masked (ivar 0); gpu_specter stops with a "
        "ValueError on such pixels with ivar > 0"
    ]
    assert np.all(np.isfinite(out["specflux"]))
    ivar = clean.ivar.copy()
    ivar[453, 208] = 0
    same = gpu_specter.extract_frame(
        {"image": clean.pixels, "ivar": ivar},
        psf,
        25,
        10,
        5,
        "5760,5860,0.8",
        nsubbundles=5,
        psferr=0.01,
        loglevel="WARNING",
    )
    assert np.array_equal(out["specflux"], same["specflux"])


# ---- io ---------------------------------------------------------------------------------------


def test_read_img(masked):
    fits = pytest.importorskip("astropy.io.fits")
    img = gpu_specter.io.read_img(masked.path)
    assert set(img) == {"image", "ivar", "imagehdr", "mask", "fibermap", "fibermaphdr"}
    with fits.open(masked.path) as hdus:
        mask, ivar = hdus["MASK"].data, hdus["IVAR"].data.astype(np.float64)
        assert np.array_equal(img["image"], hdus["IMAGE"].data.astype(np.float64))
    assert img["image"].dtype == img["ivar"].dtype == np.float64 and img["ivar"].dtype.isnative
    assert np.count_nonzero(mask) == 119 and np.all(img["ivar"][mask != 0] == 0)
    assert np.array_equal(img["ivar"][mask == 0], ivar[mask == 0]) and np.array_equal(img["mask"], mask)
    assert img["imagehdr"]["CAMERA"] == "r0" and img["fibermaphdr"]["EXTNAME"] == "FIBERMAP"
    assert list(img["fibermap"]["FIBER"]) == list(range(50)) and img["fibermap"]["OBJTYPE"][0] == "TGT"


@pytest.fixture
def frame_dict(masked):
    pytest.importorskip("astropy")
    img = gpu_specter.io.read_img(masked.path)
    out = gpu_specter.extract_frame(
        img,
        gpu_specter.io.read_psf(data_path("psf-r0-00051060.fits")),
        25,
        0,
        5,
        "5760,5800,0.8",
        nsubbundles=5,
        psferr=0.01,
        model=True,
        loglevel="WARN",
    )
    return dict(out, imagehdr=img["imagehdr"], fibermap=img["fibermap"][:5], fibermaphdr=img["fibermaphdr"])


def test_write_and_read_frame(frame_dict, tmp_path):
    path = tmp_path / "frame.fits"
    for dtype in (np.float32, np.float64):
        gpu_specter.io.write_frame(path, frame_dict, dtype=dtype)
        back = gpu_specter.io.read_frame(path)
        assert set(back) == {"flux", "ivar", "wave", "mask", "resolution", "fibermap", "chi2pix"}
        for key, theirs in (
            ("flux", "specflux"),
            ("ivar", "specivar"),
            ("resolution", "Rdiags"),
            ("chi2pix", "chi2pix"),
        ):
            assert back[key].dtype == dtype, key
            assert np.array_equal(back[key], frame_dict[theirs].astype(dtype)), key
        assert np.array_equal(back["mask"], frame_dict["specmask"]) and back["mask"].dtype == np.int64
        assert np.array_equal(back["wave"], frame_dict["wave"])
        assert np.array_equal(back["fibermap"], frame_dict["fibermap"])
    from astropy.io import fits

    with fits.open(path) as hdus:
        assert [h.name for h in hdus] == ["FLUX", "IVAR", "MASK", "WAVELENGTH", "RESOLUTION", "FIBERMAP", "CHI2PIX"]
        assert hdus["FLUX"].header["CAMERA"] == "r0" and "TTYPE1" in hdus["FIBERMAP"].header
    gpu_specter.io.write_frame(path, dict(frame_dict, fibermap=None))
    assert gpu_specter.io.read_frame(path)["fibermap"] is None
    gpu_specter.io.write_model(tmp_path / "model.fits", frame_dict)
    with fits.open(tmp_path / "model.fits") as hdus:
        assert hdus[0].name == "MODEL" and hdus[0].header["CAMERA"] == "r0"
        assert np.array_equal(hdus[0].data, frame_dict["modelimage"])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["frame.fits", "model.fits"]


def test_writers_record_dependencies(tmp_path):
    depend = pytest.importorskip("desiutil.depend", reason="desiutil reads the DEPNAMnn/DEPVERnn cards")
    from astropy.io import fits

    # imagehdr's own record of a code keeps its nn; the drop-in's are added after it.
    imagehdr = fits.Header([("CAMERA", "r0"), ("DEPNAM00", "numpy"), ("DEPVER00", "0.1")])
    arrays = {key: np.ones((2, 5)) for key in ("specflux", "specivar", "chi2pix", "pixmask_fraction")}
    frame = dict(
        arrays,
        specmask=np.zeros((2, 5), np.int32),
        wave=np.linspace(5760, 5763.2, 5),
        Rdiags=np.ones((2, 3, 5)),
        modelimage=np.ones((4, 3)),
        imagehdr=imagehdr,
        fibermap=None,
        fibermaphdr=None,
    )
    gpu_specter.io.write_frame(tmp_path / "frame.fits", frame)
    gpu_specter.io.write_model(tmp_path / "model.fits", frame)
    for path in ("frame.fits", "model.fits"):
        header = fits.getheader(tmp_path / path, 0)
        assert header["DEPNAM00"] == "numpy" and depend.getdep(header, "numpy") == np.__version__
        assert depend.getdep(header, "perfex") == perfex.__version__
        assert depend.getdep(header, "kokkos") == perfex.frames.dependencies()[1][1]
        assert depend.getdep(header, "perfex.gpu_specter") == perfex.__version__
        assert [name for name, _ in depend.iterdep(header)] == ["numpy", "perfex", "kokkos", "perfex.gpu_specter"]
    assert imagehdr["DEPVER00"] == "0.1"  # the caller's header is left as it was


def test_writers_are_atomic(frame_dict, tmp_path, monkeypatch):
    from astropy.io import fits

    path = tmp_path / "frame.fits"
    gpu_specter.io.write_frame(path, frame_dict)
    before = path.read_bytes()

    def interrupted(self, f, **kwargs):
        f.write(b"SIMPLE  =                    T")
        raise KeyboardInterrupt

    monkeypatch.setattr(fits.HDUList, "writeto", interrupted)
    for write in (
        lambda: gpu_specter.io.write_frame(path, frame_dict),
        lambda: gpu_specter.io.write_model(path, frame_dict),
    ):
        with pytest.raises(KeyboardInterrupt):
            write()
        assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["frame.fits"]
    monkeypatch.undo()
    with pytest.raises(KeyError, match="frame: missing 'chi2pix'"):
        gpu_specter.io.write_frame(path, {k: v for k, v in frame_dict.items() if k != "chi2pix"})
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == ["frame.fits"]


def test_io_errors_name_file_and_hdu(masked, tmp_path):
    pytest.importorskip("astropy")
    with pytest.raises(OSError, match=rf"FITS file '{re.escape(masked.path)}': no HDU with EXTNAME 'FLUX'"):
        gpu_specter.io.read_frame(masked.path)
    with pytest.raises(FileNotFoundError):
        gpu_specter.io.read_img(tmp_path / "absent.fits")
    big = np.arange(3, dtype=">f8")
    swapped = gpu_specter.io.native_endian(big)
    assert swapped.dtype.isnative and np.array_equal(swapped, big)
    little = np.arange(3.0)
    assert gpu_specter.io.native_endian(little) is little


# ---- IO coordinators --------------------------------------------------------------------------


class FakeComm:
    def __init__(self, size):
        self.rank, self.size = 0, size


def test_io_coordinators_roles():
    mpi = gpu_specter.mpi
    with pytest.raises(TypeError):
        mpi.AbstractIOCoordinator()
    with pytest.raises(AssertionError, match="ParallelIOCoordinator requires at least 3 MPI ranks"):
        mpi.ParallelIOCoordinator(FakeComm(2))
    serial = mpi.SerialIOCoordinator(FakeComm(4))
    nompi = mpi.NoMPIIOCoordinator()
    assert isinstance(serial, mpi.AbstractIOCoordinator) and isinstance(nompi, mpi.AbstractIOCoordinator)
    assert (serial.work_comm, nompi.work_comm, nompi.comm, nompi.size) == (serial.comm, None, None, 1)
    assert [mpi.ParallelIOCoordinator.is_reader(r) for r in range(4)] == [True, False, False, False]
    assert [mpi.ParallelIOCoordinator.is_writer(r) for r in range(4)] == [False, True, False, False]
    assert [mpi.ParallelIOCoordinator.is_worker(r) for r in range(4)] == [False, False, True, True]
    assert all(mpi.SerialIOCoordinator.is_worker(r) for r in range(4))
    assert (nompi.read(lambda: 1, 0), nompi.process(lambda: 2, 0)) == (1, 2)
    assert nompi.write(lambda p: p + 1, 2) == 3
    assert (serial.read(lambda: 1, 0), serial.write(lambda p: ("written", p), 5)) == (1, ("written", 5))
