"""A PSF of every format as a dict and back (Psf.to_dict / Psf.from_dict: pickling, MPI
broadcasts, PSFs built from arrays), through each format's fields() in the library: every
field's value kept, the same spots, and a dict that is not a PSF refused by name."""

import numpy as np
import perfex
import pytest

TYPES = {
    "gauss-hermite-v3": "GAUSS-HERMITE",
    "gauss-hermite2": "GAUSS-HERMITE2",
    "spotgrid": "SPOTGRID",
}


@pytest.fixture(scope="module")
def psfs(tmp_path_factory):
    folder = tmp_path_factory.mktemp("dicts")
    out = {}
    for path in perfex._perfex.write_synthetic_psfs(str(folder), 6, 0.002):
        name = path.rsplit("psf-synthetic-", 1)[1][: -len(".fits")]
        if name in TYPES:
            out[name] = perfex.read_psf(path)
    return out


def same_dict(a, b):
    assert a.keys() == b.keys()
    for key in a:
        if isinstance(a[key], np.ndarray):
            assert a[key].shape == b[key].shape and np.array_equal(a[key], b[key]), key
        else:
            assert a[key] == b[key], key


@pytest.mark.parametrize("name", TYPES)
def test_dict_round_trip_keeps_every_field(psfs, name):
    psf = psfs[name]
    d = psf.to_dict()
    assert d["psftype"] == TYPES[name] == psf.psftype
    back = perfex.Psf.from_dict(d)
    same_dict(back.to_dict(), d)
    for fibre, wave in [(0, 5700.0), (5, 7600.5)]:
        assert np.array_equal(back.xypix(fibre, wave)[2], psf.xypix(fibre, wave)[2])


def test_dict_arrays_have_the_formats_shapes(psfs):
    gh, grid = psfs["gauss-hermite-v3"].to_dict(), psfs["spotgrid"].to_dict()
    assert gh["xtrace"].shape == (6, gh["xtrace"].shape[1])
    assert gh["coeff"].shape == (len(gh["param_names"]), 6, gh["legdeg"] + 1)
    npos, nwave = len(grid["spotpos"]), len(grid["spotwave"])
    assert grid["spots"].shape[:2] == (npos, nwave) and grid["fiberpos"].shape == (6,)


def test_named_fields_of_every_format(psfs):
    assert psfs["gauss-hermite-v3"].param_names[:2] == ["GHSIGX", "GHSIGY"]
    assert "GHSIGX2" in psfs["gauss-hermite2"].param_names
    assert psfs["spotgrid"].param_names == []
    assert [psfs[n].fibermin for n in TYPES] == [0, 0, 0]


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda d: d.pop("hsizex"), "PSF: missing 'hsizex'"),
        (lambda d: d.update(hsizex="five"), "field 'hsizex' has the wrong type"),
        (lambda d: d.update(coeff=d["coeff"][0]), "coeff must be a 3-D [nparam][nfib][legdeg+1] array"),
        (lambda d: d.update(coeff=d["coeff"][:, :4]), "coeff [nparam][nfib][legdeg+1] has nfib = 4, expected 6"),
        (lambda d: d.update(ytrace=d["ytrace"][:5]), "ytrace [nfib][ncoeff] has nfib = 5, expected 6"),
        (lambda d: d.update(psftype="MONOSPOT"), "psftype 'MONOSPOT' is not one perfex reads (GAUSS-HERMITE, "),
        (lambda d: d.update(psftype="SPOTGRID"), "PSF: missing 'fiberpos'"),
    ],
)
def test_a_dict_that_is_not_a_psf_is_refused_by_name(psfs, change, message):
    d = psfs["gauss-hermite-v3"].to_dict()
    change(d)
    with pytest.raises(perfex.Error) as e:
        perfex.Psf.from_dict(d)
    assert message in str(e.value)


def test_a_spotgrid_dict_takes_its_sample_size_from_spots(psfs):
    d = psfs["spotgrid"].to_dict()
    d["spots"] = d["spots"][:, :, :-4, :-4]  # 4 spot pixels fewer along each side
    back = perfex.Psf.from_dict(d)
    assert (back.spot_rows, back.spot_cols) == (psfs["spotgrid"].spot_rows - 1, psfs["spotgrid"].spot_cols - 1)


def test_the_formats_are_the_librarys():
    assert perfex.Psf.psftypes() == list(TYPES.values())


def test_a_spotgrid_dict_whose_spots_miss_a_slit_position_is_refused(psfs):
    d = psfs["spotgrid"].to_dict()
    d["spots"] = d["spots"][1:]
    with pytest.raises(perfex.Error, match=r"spots \[npos\]\[nwave\]\[ny\]\[nx\] has npos = \d+, expected"):
        perfex.Psf.from_dict(d)
