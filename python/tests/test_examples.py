"""The Python quickstart of examples/ runs as written and writes the frame the API gives."""

import os

import numpy as np
import perfex

from conftest import REPO, data_path, run_python


def test_quickstart(tmp_path, psf_path):
    image = data_path("sim-r0-b0-1.fits.gz")
    out = tmp_path / "frame.fits"
    r = run_python([os.path.join(REPO, "examples", "python", "quickstart.py"), psf_path, image, str(out)])
    assert r.returncode == 0, r.stderr
    assert "0 failed patches" in r.stdout
    frame = perfex.read_frame(out)
    assert frame.nspec == 25 and frame.nwave == 251
    pre = perfex.read_preproc(image)
    direct = perfex.extract_frame(
        pre.pixels,
        pre.ivar,
        perfex.read_psf(psf_path),
        wavelength="5760,5960,0.8",
        specmin=0,
        nspec=25,
        psferr=0.01,
        progress=False,
    )
    assert np.array_equal(frame.flux, direct.flux.astype(np.float32))
