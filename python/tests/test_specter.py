"""perfex.specter, the specter drop-in, on the synthetic PSF in every format perfex reads
(perfex._perfex.write_synthetic_psfs): install_alias, load_psf and the PSF's geometry and spots
against perfex.Psf, projections, refused formats, util.TraceSet, and ex2d against
perfex.extract_frame. specter's own tests and desispec's run on it in test_clients.py."""

import os
import sys

import numpy as np
import perfex
import pytest

pytest.importorskip("scipy", reason="perfex.specter needs scipy")
pytest.importorskip("astropy", reason="perfex.specter reads PSF headers with astropy")

import perfex.specter  # noqa: E402
from perfex.specter import psf as specter_psf  # noqa: E402
from perfex.specter.util import TraceSet, fit_traces  # noqa: E402

FORMATS = ("gauss-hermite-v3", "gauss-hermite-v2", "gauss-hermite2", "spotgrid")
CLASSES = {
    "gauss-hermite-v3": "GaussHermitePSF",
    "gauss-hermite-v2": "GaussHermitePSF",
    "gauss-hermite2": "GaussHermite2PSF",
    "spotgrid": "SpotGridPSF",
}


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory):
    folder = tmp_path_factory.mktemp("specter-psfs")
    paths = perfex._perfex.write_synthetic_psfs(str(folder), 10, 0.0)
    return {os.path.basename(p)[len("psf-synthetic-") : -len(".fits")]: p for p in paths}


def test_install_alias_maps_specter_modules():
    saved = {k: v for k, v in sys.modules.items() if k == "specter" or k.startswith("specter.")}
    try:
        for name in saved:
            del sys.modules[name]
        names = perfex.specter.install_alias()
        assert perfex.specter.install_alias() == names
        import specter.psf.gausshermite
        import specter.util.traceset
        from specter.extract import ex2d
        from specter.psf import load_psf

        assert ex2d is perfex.specter.ex2d and load_psf is perfex.specter.load_psf
        assert specter.psf.gausshermite.GaussHermitePSF is specter_psf.GaussHermitePSF
        assert specter.util.traceset.TraceSet is TraceSet
        assert specter.__version__ == f"perfex {perfex.__version__}"
        for name in names:
            del sys.modules[name]
        sys.modules["specter"] = type(sys)("specter")
        with pytest.raises(perfex.Error, match="specter is already imported"):
            perfex.specter.install_alias()
    finally:
        for name in [k for k in sys.modules if k == "specter" or k.startswith("specter.")]:
            del sys.modules[name]
        sys.modules.update(saved)


def test_a_class_for_every_format_the_library_reads():
    assert list(specter_psf._CLASSES) == perfex.Psf.psftypes() == ["GAUSS-HERMITE", "GAUSS-HERMITE2", "SPOTGRID"]
    assert all(cls._type == psftype for psftype, cls in specter_psf._CLASSES.items())


@pytest.mark.parametrize("fmt", FORMATS)
def test_load_psf_geometry_and_spots(synthetic, fmt):
    psf = perfex.specter.load_psf(synthetic[fmt])
    truth = perfex.read_psf(synthetic[fmt])
    assert type(psf).__name__ == CLASSES[fmt]
    assert (psf.nspec, psf.npix_x, psf.npix_y) == (truth.nfib, truth.npix_x, truth.npix_y)
    assert psf.wmin <= psf.wmin_all < psf.wmax_all <= psf.wmax
    # wavelength(y) inverts y(wavelength) to a thousandth of a row.
    rows = np.linspace(100, psf.npix_y - 100, 7)
    for ispec in (0, psf.nspec - 1):
        np.testing.assert_allclose(psf.y(ispec, psf.wavelength(ispec, rows)), rows, atol=1e-3)
    w = 0.5 * (psf.wmin_all + psf.wmax_all)
    assert psf.x(None, w).shape == (psf.nspec,) and np.all(np.diff(psf.x(None, w)) > 0)
    assert psf.x(None, [w, w + 10]).shape == (psf.nspec, 2)
    assert psf.x(0).shape == (psf.npix_y,) and psf.x().shape == (psf.nspec, psf.npix_y)
    assert psf.wavelength().shape == (psf.nspec, psf.npix_y)
    x, y = psf.xy(3, w)
    xs, ys, pix = psf.xypix(3, w)
    expected = truth.xypix(3, w)
    assert (xs, ys) == expected[:2] and np.array_equal(pix, expected[2])
    assert xs.start <= x < xs.stop and ys.start <= y < ys.stop
    assert abs(pix.sum() - 1) < 1e-6
    # Clipped to a box: the slices are relative to it, the pixels the spot's part inside it.
    box = dict(xmin=xs.start + 3, xmax=xs.stop + 5, ymin=ys.start - 2, ymax=ys.stop - 4)
    cx, cy, cpix = psf.xypix(3, w, **box)
    assert (cx, cy) == (slice(0, xs.stop - xs.start - 3), slice(2, ys.stop - ys.start - 2))
    assert np.array_equal(cpix, pix[:-4, 3:])
    assert psf.xypix(3, psf.wmin - 50)[2].shape == (0, 0)  # off the CCD: empty, as in specter
    assert psf.wdisp(0, w) > 0 and psf.xsigma(0, w) > 0 and psf.ysigma(0, w) > 0
    xmin, xmax, ymin, ymax = psf.xyrange((2, 5), (w, w + 20))
    assert xmin <= psf.xypix(2, w)[0].start and xmax >= psf.xypix(4, w + 20)[0].stop
    assert ymin <= min(ys.start, psf.xypix(2, w)[1].start) and ymax >= psf.xypix(4, w + 20)[1].stop


def test_project_and_projection_matrix(synthetic):
    psf = perfex.specter.load_psf(synthetic["gauss-hermite-v3"])
    w0 = 0.5 * (psf.wmin_all + psf.wmax_all)
    wave = w0 + np.arange(30) * 0.8
    rng = np.random.default_rng(3)
    phot = rng.uniform(10, 100, (3, len(wave)))
    xyrange = psf.xyrange((2, 5), wave)
    xmin, xmax, ymin, ymax = xyrange
    image = psf.project(wave, phot, specmin=2)
    sub = psf.project(wave, phot, specmin=2, xyrange=xyrange)
    assert image.shape == (psf.npix_y, psf.npix_x)
    np.testing.assert_allclose(image.sum(), phot.sum(), rtol=1e-6)
    assert np.array_equal(sub, image[ymin:ymax, xmin:xmax])
    a = psf.projection_matrix((2, 5), wave, xyrange)
    assert a.shape == ((ymax - ymin) * (xmax - xmin), phot.size)
    np.testing.assert_allclose(a.dot(phot.ravel()).reshape(sub.shape), sub, rtol=1e-12, atol=1e-12)
    stacked = psf.project(wave, np.stack([phot, 2 * phot]), specmin=2, xyrange=xyrange)
    assert stacked.shape == (2,) + sub.shape and np.allclose(stacked[1], 2 * sub)
    with pytest.raises(ValueError, match="mismatch"):
        psf.project(wave[:-1], phot)


def test_spot_widths_fitted_over_the_ccd_rows(synthetic):
    """xsigma, ysigma and wdisp fit the spots at 20 wavelengths from CCD row 10 to npix_y - 10,
    as specter's do, where the PSF's wavelength domain is narrower too (its spots
    extrapolated)."""
    fields = perfex.read_psf(synthetic["gauss-hermite2"]).to_dict()
    fields["wavemin"], fields["wavemax"] = fields["wavemin"] + 300, fields["wavemax"] - 300
    psf = specter_psf.psf_of(perfex.Psf.from_dict(fields))
    asked, pix = [], psf.pix
    psf.pix = lambda ispec, wavelength: asked.append(wavelength) or pix(ispec, wavelength)
    assert psf.wdisp(1, 6500.0) > 0 and psf.xsigma(1, 6500.0) > 0
    rows = np.linspace(10, psf.npix_y - 10, 20)
    np.testing.assert_array_equal(asked, np.tile(psf.wavelength(1, rows), 2))
    assert asked[0] < psf.perfex_psf.wavemin and asked[19] > psf.perfex_psf.wavemax


@pytest.mark.parametrize("fmt", ["gauss-hermite-v3", "gauss-hermite2"])
def test_project_leaves_out_the_first_half_row(synthetic, fmt):
    """specter's PSF.project projects the wavelengths between the centres of the CCD's first
    and last rows: nothing of photons at the first half row (or beyond the last row's edge),
    part of a spot a half row further."""
    psf = perfex.specter.load_psf(synthetic[fmt])
    photons = [psf.project(np.array([psf.wavelength(3, row)]), np.array([1000.0]), specmin=3).sum()
               for row in (-0.25, 0.25, psf.npix_y - 0.75, psf.npix_y - 0.25)]  # fmt: skip
    assert photons[0] == 0 and photons[3] == 0
    assert 300 < photons[1] < 1000 and 300 < photons[2] < 1000


@pytest.mark.parametrize("fmt, offset", [("gauss-hermite-v3", 0.5), ("gauss-hermite2", 0.0)])
def test_spots_clipped_by_row_0_in_specters_box(synthetic, fmt, offset):
    """A spot whose box starts below row 0: specter's box starts at int(y - HSIZEY + offset)
    (Python's int, toward zero: a row later than perfex's floor), the spot normalised over it;
    what the CCD shows of it (xypix, projection_matrix) is that."""
    psf = perfex.specter.load_psf(synthetic[fmt])
    w = psf.wavelength(3, 1.3)
    start = psf.y(3, w) - psf.perfex_psf.hsizey + offset
    assert start < -1 and start != np.floor(start)
    xs, ys, pix = psf.xypix(3, w, ymin=-20)
    cx, cy, perfex_pix = psf.perfex_psf.xypix(3, w)
    assert ys.start - 20 == int(start) == cy.start + 1 and ys.stop - 20 == cy.stop and xs.start == cx.start
    np.testing.assert_allclose(pix, perfex_pix[1:] / perfex_pix[1:].sum(), rtol=1e-13, atol=0)
    on_ccd = psf.xypix(3, w)[2]
    np.testing.assert_array_equal(on_ccd, pix[-int(start) :])
    xyrange = (xs.start, xs.stop, 0, 20)
    a = psf.projection_matrix(3, [w], xyrange).toarray().reshape(20, -1)
    np.testing.assert_array_equal(a[: on_ccd.shape[0]], on_ccd)


@pytest.mark.parametrize("psftype", ["MONOSPOT", "PCA-PIX"])
def test_refused_formats_are_named(tmp_path, psftype):
    from astropy.io import fits

    path = str(tmp_path / "psf-other.fits")
    header = fits.Header([("PSFTYPE", psftype), ("NPIX_X", 10), ("NPIX_Y", 10), ("NSPEC", 1)])
    fits.PrimaryHDU(np.zeros((2, 2)), header=header).writeto(path)
    with pytest.raises(perfex.Error, match=rf"{path}: PSFTYPE {psftype} is not supported"):
        perfex.specter.load_psf(path)


def test_load_psf_of_a_missing_file_names_it(tmp_path):
    path = str(tmp_path / "absent.fits")
    with pytest.raises(perfex.Error, match="absent.fits"):
        perfex.specter.load_psf(path)


def test_traceset_fit_eval_invert():
    wave = np.linspace(5000, 6000, 50)
    rows = np.stack([10 + 2.0 * (wave - 5000) + 1e-4 * (wave - 5000) ** 2, 30 + 1.9 * (wave - 5000)])
    traces = fit_traces(wave, rows, deg=3)
    assert traces.ntrace == 2 and traces._coeff.shape == (2, 4)
    np.testing.assert_allclose(traces.eval(None, wave), rows, atol=1e-8)
    np.testing.assert_allclose(traces.eval(1, 5500.0), 30 + 1.9 * 500, atol=1e-8)
    np.testing.assert_allclose(traces.eval((0, 2), wave), rows, atol=1e-8)
    inverse = traces.invert()
    np.testing.assert_allclose(inverse.eval(0, traces.eval(0, wave)), wave, atol=1e-6)
    with pytest.raises(ValueError, match="increasing"):
        fit_traces(wave[::-1], rows)


def simulated(psf, specmin, nspec, wave, seed=5):
    """(image, ivar, phot): Poisson photons of nspec spectra projected by psf, with read noise."""
    rng = np.random.default_rng(seed)
    phot = rng.uniform(50, 500, (nspec, len(wave)))
    model = psf.project(wave, phot, specmin=specmin)
    image = model + rng.normal(0, 3.0, model.shape)
    return image, 1.0 / (9.0 + model), phot


@pytest.mark.parametrize("fmt", ["gauss-hermite-v3", "spotgrid"])
def test_ex2d_is_perfex_extract_frame(synthetic, fmt):
    psf = perfex.specter.load_psf(synthetic[fmt])
    w0 = np.ceil(psf.wmin_all) + 100
    wave = np.arange(w0, w0 + 60, 1.0)
    image, ivar, phot = simulated(psf, 2, 4, wave)
    flux, fivar, rdata = perfex.specter.ex2d(image, ivar, psf, 2, 4, wave, wavesize=20, bundlesize=5)
    frame = perfex.extract_frame(
        image, ivar, psf.perfex_psf, wavelength=(wave[0], wave[-1], 1.0), specmin=2, nspec=4, bundlesize=5,
        nsubbundles=1, nwavestep=20, geometry="specter", progress=False,
    )  # fmt: skip
    assert np.array_equal(flux, frame.flux) and np.array_equal(fivar, frame.ivar)
    ndiag = perfex.specter.extract.resolution_ndiag(psf, 2, 4, 1.0)
    centre = frame.ndiag
    assert rdata.shape == (4, 2 * ndiag + 1, len(wave))
    assert np.array_equal(rdata, frame.resolution[:, centre - ndiag : centre + ndiag + 1])
    # The photons come back (flux per Angstrom of 1 A bins; R's rows sum to 1).
    assert np.all(fivar > 0)
    inner = np.s_[:, 10:-10]
    error = np.sqrt((1 / fivar[inner]).sum(axis=1))
    assert np.all(np.abs(flux[inner].sum(axis=1) - phot[inner].sum(axis=1)) < 4 * error)
    out = perfex.specter.ex2d(image, ivar, psf, 2, 4, wave, full_output=True, ndecorr=True)
    assert set(out) == {"flux", "ivar", "resolution_data", "modelimage", "pixmask_fraction", "chi2pix"}
    assert out["modelimage"].shape == image.shape and out["chi2pix"].shape == flux.shape
    assert not np.array_equal(out["resolution_data"], rdata)  # the noise decorrelation's R


def test_ex2d_on_a_box_of_the_ccd(synthetic):
    psf = perfex.specter.load_psf(synthetic["gauss-hermite-v3"])
    w0 = np.ceil(psf.wmin_all) + 100
    wave = np.arange(w0, w0 + 40, 1.0)
    image, ivar, _ = simulated(psf, 0, 3, wave)
    xmin, xmax, ymin, ymax = psf.xyrange((0, 3), (wave[0] - 30, wave[-1] + 30))
    box = np.s_[ymin:ymax, xmin:xmax]
    whole = perfex.specter.ex2d(image, ivar, psf, 0, 3, wave, full_output=True)
    part = perfex.specter.ex2d(
        image[box], ivar[box], psf, 0, 3, wave, xyrange=(xmin, xmax, ymin, ymax), full_output=True
    )
    assert part["modelimage"].shape == image[box].shape
    # The same to a thousandth of sigma (the box's edges mask light of the patches' margins).
    assert np.abs((part["flux"] - whole["flux"]) * np.sqrt(whole["ivar"])).max() < 1e-3
    # An image smaller than the CCD, without xyrange, is the CCD's first rows and columns.
    corner = perfex.specter.ex2d(image[:ymax, :xmax], ivar[:ymax, :xmax], psf, 0, 3, wave, full_output=True)
    assert corner["modelimage"].shape == (ymax, xmax)
    assert np.abs((corner["flux"] - whole["flux"]) * np.sqrt(whole["ivar"])).max() < 1e-3
    with pytest.raises(perfex.RequestError, match="xyrange"):
        perfex.specter.ex2d(image[box], ivar[box], psf, 0, 3, wave, xyrange=(xmin, xmax + 1, ymin, ymax))


def test_ex2d_debug_is_ignored_with_a_warning(synthetic, caplog):
    psf = perfex.specter.load_psf(synthetic["gauss-hermite-v3"])
    w0 = np.ceil(psf.wmin_all) + 100
    image = np.zeros((psf.npix_y, psf.npix_x))
    perfex.specter.ex2d(image, image + 1, psf, 0, 1, np.arange(w0, w0 + 10, 1.0), debug=True)
    assert "debug=True ignored" in caplog.text


def test_ex2d_refuses_a_nonuniform_grid(synthetic):
    psf = perfex.specter.load_psf(synthetic["gauss-hermite-v3"])
    wave = np.array([6000.0, 6001.0, 6003.0])
    image = np.zeros((psf.npix_y, psf.npix_x))
    with pytest.raises(perfex.RequestError, match="wavelengths"):
        perfex.specter.ex2d(image, image, psf, 0, 2, wave)


@pytest.fixture(scope="module")
def real_specter():
    """The path of specter's checkout, importable (specter on sys.path). Skips without it
    (PERFEX_CLIENTS) or without numba, which specter needs."""
    import importlib.util

    import clients

    specter_py = clients.client_py("specter")
    if specter_py is None:
        pytest.skip(f"specter's checkout not found in {clients.clients_root()} (set PERFEX_CLIENTS)")
    if importlib.util.find_spec("numba") is None:
        pytest.skip(f"specter needs numba, not installed for {sys.executable}")
    if specter_py not in sys.path:
        sys.path.insert(0, specter_py)
    return specter_py


def noisy_image(psf, nspec, wave, seed=46):
    """(image, ivar): random photons of spectra 0..nspec-1 projected by (real specter's) psf,
    plus Poisson and read noise."""
    rng = np.random.default_rng(seed)
    model = psf.project(wave, rng.uniform(100, 1000, (nspec, len(wave))), specmin=0)
    return model + rng.normal(0, np.sqrt(9.0 + model)), 1 / (9.0 + model)


@pytest.fixture(scope="module")
def against_specter(real_specter):
    """(ours, theirs): the drop-in's and real specter's ex2d results (flux, ivar, resolution) on
    specter's GAUSS-HERMITE test PSF: fibres 0-9 in bundles of 5 and sub-bundles of 2, 6000-6299
    A in 1 A bins and patches of 50, an image that specter's PSF.project made of random photons
    plus Poisson and read noise. Skips without specter's checkout (PERFEX_CLIENTS)."""
    import specter.extract
    import specter.psf

    path = os.path.join(real_specter, "specter", "test", "t", "psf-gausshermite.fits")
    theirs = specter.psf.load_psf(path)
    wave = np.arange(6000.0, 6300.0, 1.0)
    image, ivar = noisy_image(theirs, 10, wave)
    args = (0, 10, wave)
    options = dict(bundlesize=5, nsubbundles=2, wavesize=50)
    return (
        perfex.specter.ex2d(image, ivar, perfex.specter.load_psf(path), *args, **options),
        specter.extract.ex2d(image, ivar, theirs, *args, **options),
    )


def pulls(against_specter):
    (f1, i1, _), (f2, i2, _) = against_specter
    return np.abs(f1 - f2) / np.sqrt(1 / i1 + 1 / i2)


def test_ex2d_close_to_specter(against_specter):
    """The drop-in's ex2d against specter's: the same resolution band's shape and within 0.01
    sigma in every bin (gpu_specter's patches and specter's differ at their edges)."""
    (_, i1, r1), (_, i2, r2) = against_specter
    assert r1.shape == r2.shape
    assert pulls(against_specter).max() < 0.01
    np.testing.assert_allclose(i1, i2, rtol=1e-3)
    np.testing.assert_allclose(r1, r2, atol=1e-3)


def test_ex2d_reproduces_specter_to_rounding(against_specter):
    """The library's specter geometry: specter's patches, so its flux to rounding (the solvers
    differ: band Cholesky against sparse LU; 5e-9 sigma measured), ivar and the resolution band
    too."""
    (_, i1, r1), (_, i2, r2) = against_specter
    assert pulls(against_specter).max() < 1e-7
    np.testing.assert_allclose(i1, i2, rtol=1e-7)
    np.testing.assert_allclose(r1, r2, rtol=0, atol=1e-8)


def specter_ex2d(image, ivar, psf, specmin, nspec, wavelengths, bundlesize, nsubbundles, wavesize, xyrange=None):
    """(flux, ivar) per Angstrom and the model image of specter's ex2d (specter/extract/ex2d.py:
    its bundles from specmin, patch boxes from PSF.xyrange padded by round(0.8 spot rows) and
    clipped to the image's rows (the CCD's, or xyrange's: image is then that box), wavelength
    padding to int(0.2 spot rows) beyond them, each patch's fit A x over its box), written again
    over the drop-in's PSF geometry and ex2d_patch, which test_ex2d_patch_reproduces_specter
    holds to 1e-11 of specter's."""
    ex = perfex.specter.extract
    x0, _, row_min, row_max = (0, psf.npix_x, 0, psf.npix_y) if xyrange is None else xyrange
    dw, nwave = wavelengths[1] - wavelengths[0], len(wavelengths)
    flux, fivar, model = np.zeros((nspec, nwave)), np.zeros((nspec, nwave)), np.zeros(image.shape)
    ndiag = ex.resolution_ndiag(psf, specmin, nspec, dw)
    ny = psf.pix(0, (psf.wmin_all + psf.wmax_all) / 2).shape[0]
    for lo in range(specmin, specmin + nspec, bundlesize):
        size = min(bundlesize, specmin + nspec - lo)
        for core, solved in zip(*ex.split_bundle(size, min(size, nsubbundles))):
            speclo, spechi, keep = lo + solved[0], lo + solved[-1] + 1, np.isin(solved, core)
            rows = np.arange(speclo, spechi)[keep] - specmin
            for k in range(0, nwave, wavesize):
                wlo, whi = wavelengths[k], wavelengths[min(k + wavesize, nwave) - 1]
                xlo, xhi, ylo, yhi = psf.xyrange((speclo, spechi), (wlo, whi))
                ylo, yhi = max(ylo - round(0.8 * ny), row_min), min(yhi + round(0.8 * ny), row_max)
                nlo = max(int((wlo - psf.wavelength(speclo, ylo - int(0.2 * ny))) / dw) - 1, ndiag)
                nhi = max(int((psf.wavelength(speclo, yhi + int(0.2 * ny)) - whi) / dw) - 1, ndiag)
                ww = np.arange(wlo - nlo * dw, whi + (nhi + 0.5) * dw, dw)
                box = np.s_[ylo - row_min : yhi - row_min, xlo - x0 : xhi - x0]
                patch = ex.ex2d_patch(
                    image[box], ivar[box], psf, speclo, spechi - speclo, ww, (xlo, xhi, ylo, yhi), full_output=True
                )
                flux[rows, k : k + wavesize] = patch["flux"][keep, nlo:-nhi]
                fivar[rows, k : k + wavesize] = patch["ivar"][keep, nlo:-nhi]
                model[box] = (patch["A"] @ patch["xflux"].ravel()).reshape(yhi - ylo, xhi - xlo)
    dwave = np.gradient(wavelengths)
    return flux / dwave, fivar * dwave**2, model


@pytest.mark.parametrize(
    "fmt, where",
    [
        ("gauss-hermite2", "inside"),
        ("spotgrid", "inside"),
        ("gauss-hermite-v3", "row 0"),
        ("gauss-hermite2", "row 0"),
        ("gauss-hermite2", "box"),
    ],
)
def test_ex2d_is_specters_ex2d(synthetic, fmt, where):
    """The drop-in's ex2d (the library's specter geometry) against specter's ex2d written again
    in numpy (specter_ex2d): bundles from fibre 1 (not a multiple of bundlesize), sub-bundles of
    uneven sizes, a last patch shorter than the others; flux to rounding in sigma, and the model
    image: each patch's fit over its box, written over the earlier patches'. Inside the CCD, at
    its first rows (spots clipped by row 0, in specter's boxes: the library's and the drop-in's
    PSF.xypix agree), and on an xyrange box whose rows cut through the spectra."""
    psf = perfex.specter.load_psf(synthetic[fmt])
    w0 = np.ceil(psf.wmin_all) + 100 if where != "row 0" else np.ceil(psf.wavelength(7, 2.0))
    wave = np.arange(w0, w0 + 70, 1.0)
    image, ivar, _ = simulated(psf, 1, 7, wave)
    options = dict(bundlesize=5, nsubbundles=2, wavesize=30)
    if where == "box":
        xmin, xmax, ymin, ymax = psf.xyrange((1, 8), (wave[0], wave[-1]))
        options["xyrange"] = (xmin, xmax, ymin + 3, ymax - 3)
        image, ivar = image[ymin + 3 : ymax - 3, xmin:xmax], ivar[ymin + 3 : ymax - 3, xmin:xmax]
    out = perfex.specter.ex2d(image, ivar, psf, 1, 7, wave, full_output=True, **options)
    flux, fivar = out["flux"], out["ivar"]
    expected, expected_ivar, expected_model = specter_ex2d(image, ivar, psf, 1, 7, wave, **options)
    seen = fivar > 0  # all but bins below the CCD's first row
    assert np.array_equal(seen, expected_ivar > 0) and seen.mean() > 0.9
    assert np.count_nonzero(expected_model) > 1000
    np.testing.assert_allclose(out["modelimage"], expected_model, rtol=0, atol=1e-6 * expected_model.max())
    assert np.max(np.abs(flux - expected)[seen] / np.sqrt(1 / fivar[seen] + 1 / expected_ivar[seen])) < 1e-6
    np.testing.assert_allclose(fivar, expected_ivar, rtol=1e-6)


@pytest.mark.parametrize("ndecorr", [False, True])
def test_ex2d_patch_reproduces_specter(real_specter, ndecorr):
    """ex2d_patch, resolution_from_icov, psfbias and psfabsbias against real specter's on its
    GAUSS-HERMITE test PSF (5 fibres x 60 bins): the same patch box and every output to 1e-11
    of its largest value (the solvers differ: dense Cholesky against sparse LU)."""
    import specter.extract.ex2d
    import specter.psf

    theirs = sys.modules["specter.extract.ex2d"]
    path = os.path.join(real_specter, "specter", "test", "t", "psf-gausshermite.fits")
    psf1, psf2 = specter.psf.load_psf(path), perfex.specter.load_psf(path)
    wave = np.arange(6000.0, 6060.0, 1.0)
    image, ivar = noisy_image(psf1, 5, wave)
    a = theirs.ex2d_patch(image, ivar, psf1, 0, 5, wave, full_output=True, ndecorr=ndecorr)
    b = perfex.specter.extract.ex2d_patch(image, ivar, psf2, 0, 5, wave, full_output=True, ndecorr=ndecorr)
    assert tuple(int(v) for v in a["options"]["xyrange"]) == b["options"]["xyrange"]
    for key in ("flux", "ivar", "R", "xflux", "iCov", "A"):
        expected = a[key].toarray() if hasattr(a[key], "toarray") else a[key]
        actual = b[key].toarray() if hasattr(b[key], "toarray") else b[key]
        assert actual.shape == expected.shape, key
        assert np.max(np.abs(actual - expected)) < 1e-11 * np.max(np.abs(expected)), key
    decorr = None if ndecorr else [len(wave)] * 5
    for expected, actual in zip(
        theirs.resolution_from_icov(a["iCov"], decorr=decorr),
        perfex.specter.extract.resolution_from_icov(a["iCov"], decorr=decorr),
    ):
        np.testing.assert_allclose(actual, expected, rtol=1e-11, atol=1e-11 * np.max(np.abs(expected)))
    phot = np.ones(20)
    phot[5] = 20.0
    np.testing.assert_allclose(
        perfex.specter.extract.psfbias(psf2, psf2, wave[20:40], phot), theirs.psfbias(psf1, psf1, wave[20:40], phot),
        atol=1e-11,
    )  # fmt: skip
    ours, theirs_abs = (
        m.psfabsbias(p, p, wave[20:40], phot) for m, p in ((perfex.specter.extract, psf2), (theirs, psf1))
    )
    np.testing.assert_allclose(ours[0], theirs_abs[0], atol=1e-9)
    np.testing.assert_allclose(
        ours[1], theirs_abs[1].toarray() if hasattr(theirs_abs[1], "toarray") else theirs_abs[1], atol=1e-11
    )


def test_split_bundle_as_specter_splits(real_specter):
    """Every split of bundles of 1 to 29 fibres: the same sub-bundles as real specter's."""

    theirs = sys.modules["specter.extract.ex2d"].split_bundle
    for bundlesize in range(1, 30):
        for n in range(1, bundlesize + 1):
            for a, b in zip(theirs(bundlesize, n), perfex.specter.extract.split_bundle(bundlesize, n)):
                assert len(a) == len(b) == n and all(np.array_equal(x, y) for x, y in zip(a, b)), (bundlesize, n)
    with pytest.raises(ValueError, match="cannot split 3 fibres into 7"):
        perfex.specter.extract.split_bundle(3, 7)


def test_resolution_from_icov_decorrelates():
    """B&S: R's rows sum to 1, and R C R^T is diag(1 / ivar) (noise decorrelation) or is so
    within each spectrum's block, R being block-diagonal (signal decorrelation)."""
    rng = np.random.default_rng(3)
    root = rng.normal(size=(12, 12))
    icov = root @ root.T + 12 * np.eye(12)
    cov = np.linalg.inv(icov)
    r, ivar = perfex.specter.extract.resolution_from_icov(icov)
    np.testing.assert_allclose(r.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(r @ cov @ r.T, np.diag(1 / ivar), atol=1e-12 / ivar.min())
    r, ivar = perfex.specter.extract.resolution_from_icov(icov, decorr=[4, 8])
    np.testing.assert_allclose(r.sum(axis=1), 1.0, rtol=1e-12)
    assert not np.any(r[:4, 4:]) and not np.any(r[4:, :4])
    for block in (slice(0, 4), slice(4, 12)):
        rb = r[block, block]
        np.testing.assert_allclose(rb @ cov[block, block] @ rb.T, np.diag(1 / ivar[block]), atol=1e-12 / ivar.min())
    with pytest.raises(ValueError, match="must split the 12 unknowns"):
        perfex.specter.extract.resolution_from_icov(icov, decorr=[4, 4])


def test_ex2d_patch_refuses_a_box_of_another_shape(synthetic):
    psf = perfex.specter.load_psf(synthetic["gauss-hermite-v3"])
    with pytest.raises(ValueError, match=r"xyrange \(0, 10, 0, 10\): image shape \(5, 5\)"):
        perfex.specter.extract.ex2d_patch(
            np.zeros((5, 5)), np.ones((5, 5)), psf, 0, 1, [6000.0], xyrange=(0, 10, 0, 10)
        )


def test_ex1d_reproduces_specter(real_specter):
    """ex1d against real specter's on its GAUSS-HERMITE test PSF (5 spectra in groups of 3, 20
    rows): flux, inverse variance and model image to 1e-11. A masked pixel (specter's weights
    divide by zero there and its fit fails) gets weight 0: finite results."""
    import specter.extract.ex1d
    import specter.psf

    theirs = sys.modules["specter.extract.ex1d"].ex1d
    path = os.path.join(real_specter, "specter", "test", "t", "psf-gausshermite.fits")
    psf1, psf2 = specter.psf.load_psf(path), perfex.specter.load_psf(path)
    image, _ = noisy_image(psf1, 5, np.arange(6000.0, 6100.0, 1.0), seed=4)
    row = int(psf1.y(2, 6030.0))
    mask = np.zeros(image.shape, dtype=int)
    options = dict(readnoise=3.0, specrange=(0, 5), yrange=(row, row + 20), nspec_per_group=3, model=True)
    ours = perfex.specter.extract.ex1d(image, mask, psf2, **options)
    for expected, actual in zip(theirs(image, mask, psf1, **options), ours):
        np.testing.assert_allclose(actual, expected, rtol=1e-11, atol=1e-11 * np.max(np.abs(expected)))
    mask[row + 3, int(psf1.x(1, 6033.0))] = 1
    masked = perfex.specter.extract.ex1d(image, mask, psf2, **options)
    assert all(np.all(np.isfinite(a)) for a in masked)
    assert np.any(masked[0][:, 3] != ours[0][:, 3]) and np.array_equal(masked[0][:, 4:], ours[0][:, 4:])
