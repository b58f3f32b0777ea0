"""Accuracy against the peers on the golden data in the repository (tests/data, see its README):
gpu_specter's extraction and model image of 10 fibres x 500 wavelengths to near round-off,
specter's to its own criterion, by the numpy API, the drop-in and the command line. Never
skipped for want of data (astropy reads the reference files)."""

import os

import numpy as np
import perfex
import perfex.gpu_specter
import pytest

from conftest import REPO, compare_with_reference, run_python

GOLDEN = os.path.join(REPO, "tests", "data")
PSF = os.path.join(REPO, "python", "perfex", "gpu_specter", "test", "data", "psf-r0-00051060.fits")
IMAGE = os.path.join(GOLDEN, "preproc-r0-small.fits")
# The request of the golden data (tests/data/README.md).
SMALL = dict(wavelength="5760,6159.2,0.8", specmin=0, nspec=10, nsubbundles=2, psferr=0.01)
fits = pytest.importorskip("astropy.io.fits", reason="astropy reads the reference files")


def reference(peer):
    with fits.open(os.path.join(GOLDEN, f"ref-{peer}-small.fits")) as hdus:
        return {
            h: np.asarray(hdus[h].data, dtype=np.float64)
            for h in ("FLUX", "IVAR", "RESOLUTION", "CHI2PIX", "PIXMASK_FRACTION", "WAVELENGTH")
        }


def check_gpu_specter(flux, ivar, resolution, chi2pix, pixmask, wave):
    d = compare_with_reference(flux, ivar, resolution, chi2pix, pixmask, wave, reference("gpuspecter"))
    assert d["flux_sigma"] <= 1e-9, d
    assert d["ivar_rel"] <= 1e-8, d
    assert d["resolution_abs"] <= 1e-9, d
    assert d["chi2pix_rel"] <= 1e-8, d
    assert d["pixmask_abs"] <= 1e-9, d


@pytest.fixture(scope="module")
def frame():
    return perfex.extract_frame(perfex.read_preproc(IMAGE), psf=PSF, progress=False, model_image=True, **SMALL)


def test_gpu_specter(frame):
    assert frame.npatches == 20 and frame.failed_patches == 0
    check_gpu_specter(frame.flux, frame.ivar, frame.resolution, frame.chi2pix, frame.pixmask_fraction, frame.wave)


def test_specter(frame):
    ref = reference("specter")
    pull = np.abs(frame.flux - ref["FLUX"]) / np.sqrt(1 / frame.ivar + 1 / ref["IVAR"])
    assert np.mean(pull < 0.01) >= 0.99 and pull.max() < 0.05, (np.mean(pull < 0.01), pull.max())


def test_model_image(frame):
    with fits.open(os.path.join(GOLDEN, "ref-gpuspecter-small-model.fits")) as hdus:
        ref = np.asarray(hdus["MODEL"].data, dtype=np.float64)
        y0, x0 = int(hdus["MODEL"].header["Y0"]), int(hdus["MODEL"].header["X0"])
    got = frame.model[y0 : y0 + ref.shape[0], x0 : x0 + ref.shape[1]]
    assert ref.max() > 100
    assert np.abs(got - ref).max() <= 1e-9 * ref.max()


def test_drop_in():
    img = perfex.gpu_specter.io.read_img(IMAGE)
    out = perfex.gpu_specter.core.extract_frame(img, PSF, 25, 0, 10, "5760,6159.2,0.8", nsubbundles=2, psferr=0.01)
    check_gpu_specter(
        out["specflux"], out["specivar"], out["Rdiags"], out["chi2pix"], out["pixmask_fraction"], out["wave"]
    )


def test_command_line(tmp_path):
    out = tmp_path / "frame.fits"
    r = run_python(
        [
            "-m",
            "perfex.extract",
            "-i",
            IMAGE,
            "-p",
            PSF,
            "-o",
            out,
            "-w",
            "5760,6159.2,0.8",
            "-n",
            "10",
            "--nsubbundles",
            "2",
            "--psferr",
            "0.01",
        ]
    )
    assert r.returncode == 0, r.stderr
    f = perfex.read_frame(out)
    # The file holds float32 values: gpu_specter's to float32 rounding.
    ref = reference("gpuspecter")
    assert np.allclose(f.flux, ref["FLUX"], rtol=1e-6, atol=1e-6 * np.abs(ref["FLUX"]).max())
