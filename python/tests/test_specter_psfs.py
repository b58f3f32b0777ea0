"""perfex against specter, the peer that reads every PSF format: specter's own test PSFs
(GAUSS-HERMITE PSFVER 2 and GAUSS-HERMITE2, from its checkout under $PERFEX_CLIENTS) and the
project's synthetic PSF written in each format (perfex._perfex.write_synthetic_psfs). For each:
spots against specter's PSF.xypix, then an image made by projecting known spectra through
specter's PSF (PSF.project, plus noise) extracted by specter's ex2d and by perfex with the same
psferr (the PSF's) and regularisation, compared as gpu_specter's test_compare_specter compares:
pulls |Δflux|/√(σ₁² + σ₂²) below 0.01 for >= 99 % of the bins. Skips with a message without
specter's checkout or its dependencies (numba, scipy). The numbers are printed (pytest -s)."""

import importlib.util
import os
import sys

import numpy as np
import perfex
import pytest

import clients

SPECTER_TEST_PSFS = {"gauss-hermite-v2": "psf-gausshermite.fits", "gauss-hermite2": "psf-gausshermite2.fits"}
# Fibres and wavelengths extracted (inside every PSF's coverage): fibres 0-4, 400 A.
NSPEC, GRID = 5, {"gauss-hermite-v2": (6000.0, 6400.0, 1.0), "gauss-hermite2": (6500.0, 6900.0, 1.0)}
SYNTHETIC_GRID = (6000.0, 6400.0, 0.8)


def specter_psf_module():
    path = clients.client_py("specter")
    if path is None:
        pytest.skip(f"specter's checkout not found in {clients.clients_root()} (set PERFEX_CLIENTS)")
    missing = [m for m in ("numba", "scipy", "astropy") if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip(f"specter needs {', '.join(missing)}, not installed for {sys.executable}")
    if path not in sys.path:
        sys.path.insert(0, path)
    import specter.extract
    import specter.psf

    return specter


def psf_files(tmp_path_factory):
    specter = specter_psf_module()
    files = {}
    folder = os.path.join(os.path.dirname(specter.__file__), "test", "t")
    for name, base in SPECTER_TEST_PSFS.items():
        path = os.path.join(folder, base)
        if os.path.exists(path):
            files["specter-" + name] = path
    synthetic = tmp_path_factory.mktemp("psfs")
    for path in perfex._perfex.write_synthetic_psfs(str(synthetic), 25, 0.002):
        files[os.path.basename(path)[len("psf-") : -len(".fits")]] = path
    return files


@pytest.fixture(scope="module")
def psfs(tmp_path_factory):
    return psf_files(tmp_path_factory)


CASES = [
    "specter-gauss-hermite-v2",
    "specter-gauss-hermite2",
    "synthetic-gauss-hermite-v3",
    "synthetic-gauss-hermite-v2",
    "synthetic-gauss-hermite2",
    "synthetic-spotgrid",
]


def grid(case):
    for name, g in GRID.items():
        if case == "specter-" + name:
            return g
    return SYNTHETIC_GRID


def load(psfs, case):
    specter = specter_psf_module()
    if case not in psfs:
        pytest.skip(f"{case}: specter's test PSF is not in its checkout")
    return specter.psf.load_psf(psfs[case]), perfex.read_psf(psfs[case])


@pytest.mark.parametrize("case", CASES)
def test_spots_match_specter_xypix(psfs, case):
    sp, px = load(psfs, case)
    w0, w1, _ = grid(case)
    worst = 0.0
    for fibre in (0, 2, 4, px.nfib - 1):
        for wave in np.linspace(w0, w1, 7):
            xs, ys, ref = sp.xypix(fibre, wave)
            xp, yp, pix = px.xypix(fibre, wave)
            # Both boxes in the union box (specter's is clipped at the CCD's edges only).
            c0, c1 = min(xs.start, xp.start), max(xs.stop, xp.stop)
            r0, r1 = min(ys.start, yp.start), max(ys.stop, yp.stop)
            a = np.zeros((r1 - r0, c1 - c0))
            b = np.zeros_like(a)
            a[ys.start - r0 : ys.stop - r0, xs.start - c0 : xs.stop - c0] = ref
            b[yp.start - r0 : yp.stop - r0, xp.start - c0 : xp.stop - c0] = pix
            worst = max(worst, np.abs(a - b).max() / ref.max())
    print(f"\n{case}: spots, max |perfex - specter| / max spot = {worst:.2e}")
    assert worst < 1e-10


SPECTER_CASES = ["specter-gauss-hermite-v2", "specter-gauss-hermite2"]


def drop_in(psfs, case):
    """(real specter's PSF, the drop-in's) of a case."""
    from perfex.specter.psf import psf_of

    sp, px = load(psfs, case)
    return sp, psf_of(px)


@pytest.mark.parametrize("case", SPECTER_CASES)
def test_spot_widths_match_specter(psfs, case):
    """xsigma, ysigma and wdisp (fitted to the spots from CCD row 10 to npix_y - 10, beyond the
    PSF's wavelength domain too) as specter's, and so ex2d's resolution band of specter's width
    at wide bins."""
    specter = specter_psf_module()
    sp, dp = drop_in(psfs, case)
    worst = 0.0
    for fibre in (0, sp.nspec // 2, sp.nspec - 1):
        w = np.linspace(sp.wmin, sp.wmax, 9)
        for name in ("xsigma", "ysigma", "wdisp"):
            worst = max(worst, np.max(np.abs(getattr(dp, name)(fibre, w) / getattr(sp, name)(fibre, w) - 1)))
    print(f"\n{case}: spot widths, max |drop-in / specter - 1| = {worst:.1e}")
    assert worst < 1e-7
    image = np.zeros((sp.npix_y, sp.npix_x))
    for dw in (4.0, 5.0, 6.0):
        wave = np.arange(6600.0, 6600.0 + 8 * dw, dw)
        expected = specter.extract.ex2d(image, image + 1, sp, 0, 3, wave, wavesize=8)[2]
        assert perfex.specter.ex2d(image, image + 1, dp, 0, 3, wave, wavesize=8)[2].shape == expected.shape, dw


@pytest.mark.parametrize("case", SPECTER_CASES)
def test_project_at_the_first_and_last_rows_as_specter(psfs, case):
    """PSF.project of photons at the CCD's first and last rows, their edges' half rows
    included (specter projects the wavelengths between the first and last rows' centres)."""
    sp, dp = drop_in(psfs, case)
    for fibre in (0, sp.nspec - 1):
        for row in (-0.45, -0.25, 0.25, 2.5, sp.npix_y - 2.5, sp.npix_y - 0.75, sp.npix_y - 0.45, sp.npix_y - 0.25):
            w, phot = np.array([sp.wavelength(fibre, row)]), np.array([1000.0])
            expected = sp.project(w, phot, specmin=fibre)
            np.testing.assert_allclose(dp.project(w, phot, specmin=fibre), expected, rtol=0, atol=1e-9, err_msg=row)


@pytest.mark.parametrize("case", SPECTER_CASES)
def test_spots_clipped_by_row_0_match_specter_xypix(psfs, case):
    """PSF.xypix of spots clipped by the CCD's first row (specter's box starts a row later
    than perfex's there) and of the same spots in a box below the CCD: the same slices, the
    same pixels to 1e-12 of their peak."""
    sp, dp = drop_in(psfs, case)
    worst = 0.0
    for fibre in (0, 1, sp.nspec - 1):
        for row in np.linspace(-0.4, 8, 43):
            w = sp.wavelength(fibre, row)
            for box in ({}, dict(ymin=-20)):
                xs, ys, expected = sp.xypix(fibre, w, **box)
                xd, yd, pix = dp.xypix(fibre, w, **box)
                assert (xd, yd) == (xs, ys), (fibre, row, box)
                worst = max(worst, np.abs(pix - expected).max() / expected.max())
    print(f"\n{case}: spots at row 0, max |drop-in - specter| / max spot = {worst:.2e}")
    assert worst < 1e-12


@pytest.mark.parametrize("case", CASES)
def test_xyrange_and_xypix_boxes_match_specter(psfs, case):
    """PSF.xyrange and PSF.xypix's clipping (the library's rule, which the specter geometry's
    patch boxes follow) as specter's: ranges over the CCD's edges and from where the first
    spectrum's trace is between rows -0.5 and 0.5 (specter takes its columns from row 0.5 on),
    boxes inside, across and off the CCD, wavelengths off it; a ValueError where specter's
    fails. The same slices, the same pixels to 1e-10 of their peak."""
    sp, dp = drop_in(psfs, case)
    last = sp.nspec - 1
    wmid = 0.5 * (sp.wmin_all + sp.wmax_all)
    ranges = [(sp.wmin - 50, sp.wmin + 30), (wmid, wmid + 20), (sp.wmax - 30, sp.wmax + 50), (sp.wmin, sp.wmax)]
    ranges += [(sp.wavelength(0, row), sp.wavelength(0, row) + 10) for row in (-0.3, 0.2, 0.45)]
    ranges += [(sp.wmax + 10, sp.wmax + 20)]  # off the CCD: specter's fails
    for spec_range in ((0, 1), (0, 5), (2, 5), (last - 2, last + 1), 3):
        for wave in ranges:
            try:
                expected = sp.xyrange(spec_range, wave)
            except (ValueError, IndexError):  # none of the range on the CCD
                with pytest.raises(ValueError):
                    dp.xyrange(spec_range, wave)
                continue
            assert dp.xyrange(spec_range, wave) == expected, (spec_range, wave)
    worst = 0.0
    boxes = [
        {},
        dict(ymin=-20),
        dict(xmin=20, xmax=60, ymin=5, ymax=40),
        dict(ymin=sp.npix_y - 30, ymax=sp.npix_y + 20),
    ]
    for fibre in (0, 3, last):
        for row in (-3.0, -0.2, 0.3, 2.6, 20.0, sp.npix_y / 2, sp.npix_y - 3.4, sp.npix_y - 0.7, sp.npix_y + 2.0):
            w = sp.wavelength(fibre, row)
            for box in boxes:
                xs, ys, expected = sp.xypix(fibre, w, **box)
                xd, yd, pix = dp.xypix(fibre, w, **box)
                assert (xd, yd) == (xs, ys) and pix.shape == expected.shape, (fibre, row, box)
                if expected.size:
                    worst = max(worst, np.abs(pix - expected).max() / expected.max())
    print(f"\n{case}: clipped spots, max |drop-in - specter| / max spot = {worst:.2e}")
    assert worst < 1e-10


@pytest.mark.parametrize("case, where", [("specter-gauss-hermite2", "box"), ("specter-gauss-hermite-v2", "row 0")])
def test_ex2d_at_edges_reproduces_specter(psfs, case, where):
    """The drop-in's ex2d against specter's, to rounding: on an xyrange box whose rows cut
    through the spectra (specter clips its patches to the box's rows), and at the CCD's first
    rows (spots clipped by row 0, those of traces below it empty)."""
    specter = specter_psf_module()
    sp, dp = drop_in(psfs, case)
    w0 = 6500.0 if where == "box" else np.ceil(sp.wavelength(4, 2.0))
    wave = np.arange(w0, w0 + 100, 1.0)
    rng = np.random.default_rng(46)
    model = sp.project(wave, rng.uniform(100, 1000, (5, len(wave))), specmin=0)
    image, ivar = model + rng.normal(0, np.sqrt(9.0 + model)), 1 / (9.0 + model)
    options = dict(bundlesize=5, nsubbundles=1, wavesize=50, full_output=True)
    if where == "box":
        xmin, xmax, ymin, ymax = sp.xyrange((0, 5), (wave[0], wave[-1]))
        options["xyrange"] = (xmin, xmax, ymin, ymax - 3)
        image, ivar = image[ymin : ymax - 3, xmin:xmax], ivar[ymin : ymax - 3, xmin:xmax]
    ref = specter.extract.ex2d(image, ivar, sp, 0, 5, wave, **options)
    out = perfex.specter.ex2d(image, ivar, dp, 0, 5, wave, **options)
    seen = ref["ivar"] > 0
    assert np.array_equal(out["ivar"] > 0, seen) and seen.mean() > 0.9
    pull = np.abs(out["flux"] - ref["flux"])[seen] / np.sqrt(1 / out["ivar"][seen] + 1 / ref["ivar"][seen])
    model_diff = np.abs(out["modelimage"] - ref["modelimage"]).max() / ref["modelimage"].max()
    print(f"\n{case} ({where}): ex2d max pull {pull.max():.1e}, model image {model_diff:.1e} of its peak")
    assert pull.max() < 1e-6 and model_diff < 1e-6


def spectra(nspec, wave, seed):
    """Photons per bin: a faint continuum and a few lines per fibre (dark-sky levels, S/N ~3 per
    bin, as the reference images)."""
    rng = np.random.default_rng(seed)
    dw = np.gradient(wave)
    phot = np.empty((nspec, wave.size))
    for f in range(nspec):
        density = 5.0 * (1 + 0.3 * np.sin((wave - wave[0]) / (60 + 20 * f)))
        for centre in rng.uniform(wave[0] + 20, wave[-1] - 20, 4):
            density += rng.uniform(20, 200) * np.exp(-0.5 * ((wave - centre) / 1.2) ** 2)
        phot[f] = density * dw
    return phot


@pytest.mark.parametrize("case", CASES)
def test_extraction_matches_specter_ex2d(psfs, case):
    specter = specter_psf_module()
    sp, px = load(psfs, case)
    w0, w1, dw = grid(case)
    wave = np.arange(w0, w1 + dw / 2, dw)
    phot = spectra(NSPEC, wave, seed=40)
    model = sp.project(wave, phot, specmin=0)
    rng = np.random.default_rng(41)
    read_noise = 3.0
    image = rng.poisson(np.clip(model, 0, None)) + rng.normal(0, read_noise, model.shape)
    ivar = 1.0 / (read_noise**2 + np.clip(model, 0, None))
    ref = specter.extract.ex2d(
        image, ivar, sp, 0, NSPEC, wave, bundlesize=NSPEC, nsubbundles=1, wavesize=50, full_output=True
    )
    frame = perfex.extract_frame(
        image,
        ivar,
        px,
        wavelength=f"{w0},{w1},{dw}",
        specmin=0,
        nspec=NSPEC,
        bundlesize=NSPEC,
        nsubbundles=1,
        nwavestep=50,
        progress=False,
    )
    ok = (ref["ivar"] > 0) & (frame.ivar > 0)
    sigma = np.sqrt(1 / np.where(ok, ref["ivar"], 1) + 1 / np.where(ok, frame.ivar, 1))
    pull = np.abs(frame.flux - ref["flux"]) / sigma
    below = np.mean(pull[ok] < 0.01)
    ivar_rel = np.median(np.abs(frame.ivar[ok] / ref["ivar"][ok] - 1))
    # Resolution: the diagonals both keep, over the bins both constrain.
    nd_p, nd_s = frame.resolution.shape[1] // 2, ref["resolution_data"].shape[1] // 2
    nd = min(nd_p, nd_s)
    rp = frame.resolution[:, nd_p - nd : nd_p + nd + 1, :]
    rs = ref["resolution_data"][:, nd_s - nd : nd_s + nd + 1, :]
    r_diff = np.abs(rp - rs).transpose(0, 2, 1)[ok].max()
    print(
        f"\n{case}: {ok.sum()} bins, pulls < 0.01 sigma: {100 * below:.2f} %, max pull "
        f"{pull[ok].max():.4f}; ivar median |rel diff| {ivar_rel:.1e}; R max |diff| {r_diff:.1e} "
        f"(+-{nd} diagonals)"
    )
    assert ok.mean() > 0.95
    assert below >= 0.99
