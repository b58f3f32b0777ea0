"""perfex.gpu_specter: gpu_specter.core.extract_frame's arguments, keys, shapes and values."""

import inspect

import numpy as np
import pytest

import perfex
from perfex import gpu_specter

from conftest import REFERENCE, compare_with_reference, data_path, reference

KEYS = {"specflux", "specivar", "specmask", "wave", "Rdiags", "pixmask_fraction", "chi2pix", "modelimage"}


def test_signature_is_gpu_specters():
    params = inspect.signature(gpu_specter.extract_frame).parameters
    expected = [
        ("img", inspect.Parameter.empty), ("psf", inspect.Parameter.empty),
        ("bundlesize", inspect.Parameter.empty), ("specmin", inspect.Parameter.empty),
        ("nspec", inspect.Parameter.empty), ("wavelength", None), ("nwavestep", 50),
        ("nsubbundles", 1), ("model", None), ("regularize", 0), ("psferr", None), ("comm", None),
        ("gpu", None), ("loglevel", None), ("timing", None), ("wavepad", 10), ("pixpad_frac", 0.8),
        ("wavepad_frac", 0.2), ("batch_subbundle", True), ("ranks_per_bundle", None),
    ]
    assert [(n, p.default) for n, p in params.items()] == expected
    assert gpu_specter.core.extract_frame is gpu_specter.extract_frame
    assert gpu_specter.__version__ == perfex.__version__


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
        if key == "source":
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
    out = gpu_specter.core.extract_frame(img, psf_tables, 25, 0, 50, "5760,6760,0.8", 50, 5, None, 0.0,
                                         0.01, None, False, loglevel=None, timing=timing,
                                         wavepad_frac=0.2, pixpad_frac=0.8)
    assert set(out) == KEYS
    assert out["specflux"].shape == out["specivar"].shape == out["chi2pix"].shape == (50, 1251)
    assert out["pixmask_fraction"].shape == out["specmask"].shape == (50, 1251)
    assert out["Rdiags"].shape == (50, 11, 1251) and out["wave"].shape == (1251,)
    assert out["modelimage"] is None
    assert out["specmask"].dtype == np.dtype(int)
    assert np.array_equal(out["specmask"], (out["specivar"] == 0).astype(int))
    d = compare_with_reference(out["specflux"], out["specivar"], out["Rdiags"], out["chi2pix"],
                               out["pixmask_fraction"], out["wave"], ref)
    assert d["flux_sigma"] <= 1e-9 and d["ivar_rel"] <= 1e-8 and d["resolution_abs"] <= 1e-9, d
    assert {"init-mpi-comm", "init-mpi-bcast", "extracted-bundles", "assembled-frame"} <= set(timing)


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
    frame = perfex.extract_frame(masked, psf=psf, wavelength="5760,6000,0.8", specmin=25, nspec=10,
                                 progress=False, **common)
    assert np.array_equal(a["specflux"], frame.flux) and np.array_equal(a["Rdiags"], frame.resolution)


def test_function_defaults(masked, psf):
    """wavelength None: the PSF's WAVEMIN..WAVEMAX in steps of 0.8; nsubbundles 1; model."""
    img = {"image": masked.pixels, "ivar": masked.ivar}
    out = gpu_specter.extract_frame(img, psf, 25, 20, 5, model=True)
    assert out["wave"][0] == psf.wavemin == 5543.0
    assert out["wave"].size == np.arange(5543.0, 7827.0 + 0.4, 0.8).size
    assert out["specflux"].shape == (5, out["wave"].size)
    assert out["modelimage"].shape == masked.pixels.shape
    one = perfex.extract_frame(masked, psf=psf, specmin=20, nspec=5, nsubbundles=1, wavelength="5543,7827,0.8",
                               progress=False)
    assert np.array_equal(out["specflux"], one.flux)


def test_bad_arguments(psf):
    with pytest.raises(perfex.Error, match="'image' and 'ivar'"):
        gpu_specter.extract_frame({"image": np.zeros((4, 4))}, psf, 25, 0, 25)
    with pytest.raises(perfex.Error, match="uniform grids"):
        gpu_specter.extract_frame({"image": np.zeros((4, 4)), "ivar": np.zeros((4, 4))}, psf, 25, 0, 25,
                                  wavelength=np.array([5760.0, 5761.0, 5763.0]))
    with pytest.raises(perfex.Error, match="has no YTRACE"):
        gpu_specter.io.psf_from_tables({"PSF": None, "XTRACE": None})
