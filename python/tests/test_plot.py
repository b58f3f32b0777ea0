"""perfex.plot: the quick-look PNG."""

import dataclasses
import warnings

import numpy as np
import perfex
import pytest

from conftest import run_python

pytest.importorskip("matplotlib", reason="Debian: python3-matplotlib")
import perfex.plot  # noqa: E402


def test_quicklook_png(small_frame, tmp_path):
    path = perfex.plot.quicklook(small_frame, tmp_path / "frame.png", spectra=[0, 28, 59])
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20000
    with pytest.raises(ValueError, match="60 spectra"):
        perfex.plot.quicklook(small_frame, tmp_path / "bad.png", spectra=[60])


def test_mask_states(small_frame):
    states = perfex.plot.mask_states(small_frame)
    assert states.shape == small_frame.flux.shape
    assert ((states > 0) == ((small_frame.mask != 0) | (small_frame.ivar == 0))).all()


def test_default_spectra_have_light(small_frame):
    """SMALL's fibres 5-64 of an image whose fibres 0-49 hold light: frame indices 0-44 are lit."""
    assert perfex.plot.default_spectra(small_frame) == [0, 22, 44]
    dark = dataclasses.replace(small_frame, flux=np.zeros_like(small_frame.flux))
    assert perfex.plot.default_spectra(dark) == [0, 29, 59]  # none lit: spread over the frame


def test_pulls_drawn_beside_the_spectra(small_frame, tmp_path):
    pulls = np.random.default_rng(1).standard_normal(20000)
    np.save(tmp_path / "pulls.npy", pulls)
    perfex.write_frame(tmp_path / "frame.fits", small_frame)
    r = run_python(["-m", "perfex.plot", str(tmp_path / "frame.fits"), "--pulls", str(tmp_path / "pulls.npy")])
    assert r.returncode == 0, r.stderr
    from matplotlib.image import imread

    picture = imread(tmp_path / "frame.png")
    plain = imread(perfex.plot.quicklook(small_frame, tmp_path / "plain.png"))
    assert picture.shape[1] > plain.shape[1]  # a column more, beside the spectra


def test_command_line(small_frame, tmp_path):
    perfex.write_frame(tmp_path / "frame.fits", small_frame)
    r = run_python(["-m", "perfex.plot", str(tmp_path / "frame.fits")])
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "frame.png").stat().st_size > 20000
    r = run_python(["-m", "perfex.plot", str(tmp_path / "missing.fits")])
    assert r.returncode == 1 and "missing.fits" in r.stderr and "Traceback" not in r.stderr


def test_nonfinite_values_are_drawn_as_masked(small_frame, tmp_path):
    """A frame with NaN/Inf flux or ivar (a damaged or foreign file) still gets its picture,
    with those bins counted; the command line says so."""
    bad = perfex.Frame(**small_frame.__dict__)
    bad.flux = small_frame.flux.copy()
    bad.ivar = small_frame.ivar.copy()
    bad.flux[3, 10:20] = float("nan")
    bad.flux[7, 5] = float("inf")
    bad.ivar[9, 1] = float("nan")
    assert perfex.plot.nonfinite_bins(bad) == 12
    path = perfex.plot.quicklook(bad, tmp_path / "bad.png")
    assert open(path, "rb").read()[:8] == b"\x89PNG\r\n\x1a\n"
    perfex.write_frame(tmp_path / "bad.fits", bad)
    r = run_python(["-m", "perfex.plot", str(tmp_path / "bad.fits")])
    assert r.returncode == 0, r.stderr
    assert "12 bins with a NaN or infinite flux or ivar" in r.stderr


def test_output_names(small_frame, tmp_path):
    """-o FOLDER writes FOLDER/NAME.png, -o NAME without .png writes NAME.png; the command line
    prints the file it wrote."""
    perfex.write_frame(tmp_path / "frame.fits", small_frame)
    (tmp_path / "pictures").mkdir()
    r = run_python(["-m", "perfex.plot", str(tmp_path / "frame.fits"), "-o", str(tmp_path / "pictures")])
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(tmp_path / "pictures" / "frame.png")
    assert (tmp_path / "pictures" / "frame.png").stat().st_size > 20000
    r = run_python(["-m", "perfex.plot", str(tmp_path / "frame.fits"), "-o", str(tmp_path / "quick")])
    assert r.returncode == 0 and r.stdout.strip() == str(tmp_path / "quick.png")
    assert (tmp_path / "quick.png").exists()


def odd_frame(nspec, nwave, masked=False):
    """A frame of nspec fibres x nwave wavelengths; every bin masked (ivar 0, NODATA) when asked."""
    shape = (nspec, nwave)
    return perfex.Frame(
        flux=np.ones(shape),
        ivar=np.zeros(shape) if masked else np.ones(shape),
        mask=np.full(shape, 256 if masked else 0, np.uint32),
        wave=5000 + 0.8 * np.arange(nwave),
        resolution=np.zeros((nspec, 11, nwave)),
        chi2pix=np.zeros(shape),
        pixmask_fraction=np.zeros(shape),
    )


@pytest.mark.parametrize(
    "nspec, nwave, masked", [(1, 50, False), (5, 1, False), (1, 1, False), (5, 50, True), (1, 1, True)]
)
def test_odd_frames(nspec, nwave, masked, tmp_path):
    """One fibre, one wavelength, every bin masked: a picture, no warning (a one-wavelength frame
    drew on an empty axis, with matplotlib's singular-limits warning), from the API and from a
    frame file on the command line."""
    frame = odd_frame(nspec, nwave, masked)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        path = perfex.plot.quicklook(frame, tmp_path / "odd.png")
    assert open(path, "rb").read()[:8] == b"\x89PNG\r\n\x1a\n"
    perfex.write_frame(tmp_path / "odd.fits", frame)
    r = run_python(["-W", "error::UserWarning", "-m", "perfex.plot", str(tmp_path / "odd.fits")])
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert (tmp_path / "odd.png").stat().st_size > 1000


def test_what_is_not_a_frame_and_outputs_refused(small_frame, tmp_path, psf_path):
    text = tmp_path / "notes.txt"
    text.write_text("a note\n")
    for source, words in ((text, "not a FITS file"), (psf_path, "no HDU with EXTNAME 'FLUX' (its HDUs:")):
        r = run_python(["-m", "perfex.plot", str(source), "-o", str(tmp_path / "p.png")])
        assert r.returncode == 1 and words in r.stderr and str(source) in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and not (tmp_path / "p.png").exists()
    # A frame file named f.png: its default picture is f.png itself, never written over.
    perfex.write_frame(tmp_path / "f.png", small_frame)
    before = (tmp_path / "f.png").read_bytes()
    for extra in ([], ["-o", str(tmp_path / "f.png")], ["-o", "/proc/q.png"]):
        r = run_python(["-m", "perfex.plot", str(tmp_path / "f.png")] + extra)
        assert r.returncode == 2 and "-o/--output" in r.stderr, r.stderr
    assert (tmp_path / "f.png").read_bytes() == before
    with pytest.raises(perfex.RequestError, match="is the frame file"):
        perfex.plot.quicklook(str(tmp_path / "f.png"), tmp_path / "f.png")
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary
