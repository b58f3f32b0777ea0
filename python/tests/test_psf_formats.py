"""Every PSF format perfex reads, end to end through every front end: the project's synthetic
PSF written as GAUSS-HERMITE PSFVER 3 and 2, GAUSS-HERMITE2 and a SPOTGRID sampled from it
(perfex._perfex.write_synthetic_psfs), a preproc image simulated through each, extracted by
perfex-extract (the C++ tool, when built), `python3 -m perfex.extract`, perfex.extract_frame and
the gpu_specter drop-in: the same frame from each, chi2pix near 1, and the PSF
picklable (MPI broadcasts)."""

import os
import pickle
import subprocess

import numpy as np
import perfex
import perfex.gpu_specter as gs
import pytest

import clients
from conftest import output, run_python

FORMATS = ["gauss-hermite-v3", "gauss-hermite-v2", "gauss-hermite2", "spotgrid"]
TYPES = {
    "gauss-hermite-v3": "GAUSS-HERMITE",
    "gauss-hermite-v2": "GAUSS-HERMITE",
    "gauss-hermite2": "GAUSS-HERMITE2",
    "spotgrid": "SPOTGRID",
}
WAVELENGTH = "6000,6300,0.8"
OPTIONS = dict(wavelength=WAVELENGTH, specmin=0, nspec=5, bundlesize=5, nsubbundles=1)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("formats")
    out = {}
    for path in perfex._perfex.write_synthetic_psfs(str(folder), 10, 0.0):
        name = os.path.basename(path)[len("psf-synthetic-") : -len(".fits")]
        image = clients.simulate_preproc(
            path, str(folder / f"preproc-{name}.fits"), nspec=5, wavelength="5900,6400,0.8", seed=7
        )
        out[name] = (path, image)
    return out


def cli_args(image_path, psf_path):
    """The command lines' options for the tests' request: fibres 0-4 as one bundle."""
    return [
        "-i",
        image_path,
        "-p",
        psf_path,
        "-w",
        WAVELENGTH,
        "-s",
        "0",
        "-n",
        "5",
        "--bundlesize",
        "5",
        "--nsubbundles",
        "1",
    ]


def read_frame_flux(path, geometry=None):
    """(flux, ivar) of a frame file, asserting its header's GEOMETRY when given."""
    from astropy.io import fits

    with fits.open(path) as hdus:
        if geometry is not None:
            assert hdus["FLUX"].header["GEOMETRY"] == geometry
        return np.asarray(hdus["FLUX"].data, dtype=np.float64), np.asarray(hdus["IVAR"].data, dtype=np.float64)


@pytest.mark.parametrize("name", FORMATS)
def test_read_psf_and_pickle(files, name):
    psf = perfex.read_psf(files[name][0])
    assert psf.psftype == TYPES[name]
    assert psf.nfib == 10
    back = pickle.loads(pickle.dumps(psf))
    assert back.psftype == psf.psftype and back.to_dict().keys() == psf.to_dict().keys()
    xs, ys, pix = psf.xypix(3, 6100.0)
    assert pix.shape == (ys.stop - ys.start, xs.stop - xs.start) == (psf.spot_rows, psf.spot_cols)
    assert abs(pix.sum() - 1) < 1e-12 and pix.min() >= 0
    assert np.array_equal(back.xypix(3, 6100.0)[2], pix)


@pytest.mark.parametrize("name", FORMATS)
def test_every_front_end_extracts_every_format(files, name, tmp_path):
    psf_path, image_path = files[name]
    img = perfex.read_preproc(image_path)
    api = perfex.extract_frame(img, psf=perfex.read_psf(psf_path), progress=False, **OPTIONS)
    assert api.failed_patches == 0
    good = api.ivar > 0
    assert good.mean() > 0.99
    # gpu_specter's patches for the specex layout it reads, specter's for every other format.
    assert api.options["geometry"] == ("gpu_specter" if name == "gauss-hermite-v3" else "specter")
    # The drop-in: gpu_specter's read_psf / read_img / extract_frame on the same files, with
    # gpu_specter's patches whatever the format.
    psfdata = gs.io.read_psf(psf_path)
    assert psfdata["PSF"].meta["WAVEMIN"] == pytest.approx(perfex.read_psf(psf_path).wavemin)
    dropin = gs.core.extract_frame(
        gs.io.read_img(image_path), psfdata, bundlesize=5, specmin=0, nspec=5, wavelength=WAVELENGTH, nsubbundles=1
    )
    gpu = perfex.extract_frame(img, psf=perfex.read_psf(psf_path), progress=False, geometry="gpu_specter", **OPTIONS)
    assert np.array_equal(dropin["specflux"], gpu.flux)
    assert np.array_equal(dropin["specivar"], gpu.ivar)
    # The Python command line and the C++ tool write the same frame.
    args = cli_args(image_path, psf_path)
    python_out = str(tmp_path / "python.fits")
    result = run_python(["-m", "perfex.extract", *args, "-o", python_out])
    assert result.returncode == 0, output(result)
    flux, ivar = read_frame_flux(python_out, api.options["geometry"])
    assert np.array_equal(flux, api.flux.astype(np.float32))
    exe = os.environ.get("PERFEX_EXTRACT_EXE")
    if exe:
        tool_out = str(tmp_path / "tool.fits")
        done = subprocess.run([exe, *args, "-o", tool_out], capture_output=True, text=True)
        assert done.returncode == 0, output(done)
        assert np.array_equal(read_frame_flux(tool_out, api.options["geometry"])[0], flux)
        # --geometry chooses the other patches.
        done = subprocess.run([exe, *args, "--geometry", "gpu_specter", "-o", tool_out], capture_output=True, text=True)
        assert done.returncode == 0, output(done)
        assert np.array_equal(read_frame_flux(tool_out, "gpu_specter")[0], gpu.flux.astype(np.float32))
    result = run_python(["-m", "perfex.extract", *args, "--geometry", "gpu_specter", "-o", python_out])
    assert result.returncode == 0, output(result)
    assert np.array_equal(read_frame_flux(python_out, "gpu_specter")[0], gpu.flux.astype(np.float32))
    # Pulls against the image's own fit: chi2pix near 1 where the spectra are.
    assert 0.5 < np.median(api.chi2pix[good]) < 2.0


@pytest.mark.parametrize("name", ["spotgrid", "gauss-hermite2"])
def test_a_psf_without_light_fails_its_patches(files, name, tmp_path, caplog):
    """A PSF whose spots are all zero (SPOTS = 0; GAUSS-HERMITE2 amplitudes of 0) gives every
    patch no light: each patch fails (exit 3 from the command lines), never a clean frame of
    zeros."""
    from astropy.io import fits

    psf_path, image_path = files[name]
    dark = str(tmp_path / "dark.fits")
    with fits.open(psf_path) as hdus:
        if name == "spotgrid":
            hdus["SPOTS"].data[...] = 0
        else:
            table = hdus[1].data
            for row in range(len(table)):
                if table["PARAM"][row].strip().startswith(("GH-", "GH2-", "TAILAMP")):
                    table["COEFF"][row] = 0
        hdus.writeto(dark)
    api = perfex.extract_frame(perfex.read_preproc(image_path), psf=perfex.read_psf(dark), progress=False, **OPTIONS)
    assert api.failed_patches == api.npatches > 0
    assert any("the PSF gives no light on its pixels" in w for w in api.warnings)
    dropin = gs.core.extract_frame(gs.io.read_img(image_path), gs.io.read_psf(dark), 5, 0, 5, WAVELENGTH, nsubbundles=1)
    assert dropin["specmask"].all()
    assert any("no light" in r.message and r.name.startswith("desimeter") for r in caplog.records)
    args = cli_args(image_path, dark)
    result = run_python(["-m", "perfex.extract", *args, "-o", str(tmp_path / "python.fits")])
    printed = output(result)  # desiutil's logger prints on stdout
    assert result.returncode == 3 and "no light" in printed, printed
    exe = os.environ.get("PERFEX_EXTRACT_EXE")
    if exe:
        done = subprocess.run([exe, *args, "-o", str(tmp_path / "tool.fits")], capture_output=True, text=True)
        assert done.returncode == 3 and "no light" in done.stderr, output(done)


@pytest.mark.parametrize("name", FORMATS)
def test_xypix_refuses_wavelengths_without_a_spot(files, name):
    """NaN, infinities, 1e30 and wavelengths beyond the domain made slices start at -2**31 (an
    out-of-range float-to-int conversion) with an all-zero spot: now a RequestError naming the
    fibre's spot domain; its ends give spots, and so do wavelengths a little beyond them while
    the spot stays on the CCD (specter's PSFs extrapolate there), their spots next to the ends'."""
    psf = perfex.read_psf(files[name][0])
    for wavelength in (float("nan"), float("inf"), -float("inf"), 1e30, -1e30, 100.0, 20000.0):
        with pytest.raises(perfex.RequestError, match="fibre 2's spot domain"):
            psf.xypix(2, wavelength)
    for wavelength in (psf.wavemin, psf.wavemax):
        xs, ys, pix = psf.xypix(2, wavelength)
        assert pix.shape == (psf.spot_rows, psf.spot_cols) and abs(pix.sum() - 1) < 1e-9
    dw = 1e-3 * (psf.wavemax - psf.wavemin)
    for end, beyond in ((psf.wavemin, psf.wavemin - dw), (psf.wavemax, psf.wavemax + dw)):
        ys_end = psf.xypix(2, end)[1]
        if 0 <= ys_end.start and ys_end.stop <= psf.npix_y:
            xs, ys, pix = psf.xypix(2, beyond)
            assert 0 < abs(ys.start - ys_end.start) <= 5 and abs(pix.sum() - 1) < 1e-9, (end, ys_end, ys)
        elif ys_end.stop < -psf.spot_rows or ys_end.start > psf.npix_y + psf.spot_rows:
            with pytest.raises(perfex.RequestError, match="fibre 2's spot domain"):
                psf.xypix(2, beyond)


@pytest.mark.parametrize("name", FORMATS)
def test_spots_are_xypix_in_one_call(files, name):
    """Psf.spots: the spots of several fibres at several wavelengths, each equal to xypix's,
    with xypix's refusals (the wavelength and the domain named; fibres outside the PSF)."""
    psf = perfex.read_psf(files[name][0])
    waves = np.linspace(psf.wavemin, psf.wavemax, 7)
    pixels, xcorner, ycorner = psf.spots(1, 3, waves)
    assert pixels.shape == (3, 7, psf.spot_rows, psf.spot_cols) and xcorner.shape == ycorner.shape == (3, 7)
    for i in range(3):
        for j, wavelength in enumerate(waves):
            xs, ys, pix = psf.xypix(1 + i, wavelength)
            assert (xs.start, ys.start) == (xcorner[i, j], ycorner[i, j])
            np.testing.assert_array_equal(pixels[i, j], pix)
    with pytest.raises(perfex.RequestError, match="wavelength 20000: outside fibre 0's spot domain"):
        psf.spots(0, 1, [psf.wavemin, 20000.0])
    with pytest.raises(
        perfex.RequestError,
        match=rf"fibres 0-{psf.nfib} \(fibremin 0, nfibre {psf.nfib + 1}\) requested, but the PSF has {psf.nfib} ",
    ):
        psf.spots(0, psf.nfib + 1, waves)
