"""One extension, both numpy majors: the frames extracted under numpy 2 and under numpy 1 (the
same perfex._perfex imported by a second interpreter, $PERFEX_OTHER_PYTHON) are bitwise
identical: the reference bundle (clean and masked, through the numpy API and through the
gpu_specter drop-in's read_img, whose big-endian float32 arrays are converted) and the
500-fibre r frame. The numpy 2 suite runs the comparison (each side extracts once).

As a script: `python3 test_numpy_majors.py DATA-FOLDER NAME...` prints the digests as JSON."""

import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ARRAYS = ("flux", "ivar", "mask", "wave", "resolution", "chi2pix", "pixmask_fraction")
DROP_IN = {
    "flux": "specflux",
    "ivar": "specivar",
    "mask": "specmask",
    "wave": "wave",
    "resolution": "Rdiags",
    "chi2pix": "chi2pix",
    "pixmask_fraction": "pixmask_fraction",
}
REFERENCE = dict(wavelength="5760,6760,0.8", specmin=0, nspec=50, psferr=0.01)
FRAMES = {
    "bundle": ("sim-r0-b0-1.fits.gz", "api", REFERENCE),
    "bundle-masked": ("sim-r0-b0-1-masked.fits.gz", "api", REFERENCE),
    "bundle-masked-drop-in": ("sim-r0-b0-1-masked.fits.gz", "gpu_specter", REFERENCE),
    "frame-500": ("sim-r0-b0-1.fits.gz", "api", dict(wavelength="5760,7620,0.8", specmin=0, nspec=500, psferr=0.01)),
}
PSF = "psf-r0-00051060.fits"


def digest(array):
    array = np.ascontiguousarray(array)
    return [str(array.dtype), list(array.shape), hashlib.sha256(array.tobytes()).hexdigest()]


def digests(data, names):
    """{"numpy": version, name: {array: [dtype, shape, sha256]}} of each frame of FRAMES."""
    import perfex
    import perfex.gpu_specter

    psf = perfex.read_psf(os.path.join(data, PSF))
    result = {"numpy": np.__version__}
    for name in names:
        image, route, options = FRAMES[name]
        path = os.path.join(data, image)
        if route == "api":
            pre = perfex.read_preproc(path)
            frame = perfex.extract_frame(pre.pixels, pre.ivar, psf, progress=False, **options)
            arrays = {a: getattr(frame, a) for a in ARRAYS}
        else:
            img = perfex.gpu_specter.io.read_img(path)
            out = perfex.gpu_specter.core.extract_frame(
                img,
                psf,
                25,
                options["specmin"],
                options["nspec"],
                options["wavelength"],
                50,
                5,
                psferr=options["psferr"],
                loglevel="WARNING",
            )
            arrays = {a: out[DROP_IN[a]] for a in ARRAYS}
        result[name] = {a: digest(v) for a, v in arrays.items()}
    return result


def test_frames_bitwise_under_both_numpy_majors():
    from conftest import DATA, data_path, python_env

    if int(np.__version__.split(".")[0]) < 2:
        pytest.skip("the numpy 2 suite compares the frames with numpy 1's")
    other = os.environ.get("PERFEX_OTHER_PYTHON")
    if not other:
        pytest.skip("PERFEX_OTHER_PYTHON (an interpreter with numpy 1 and this extension's Python) not set")
    data_path(PSF)
    names = list(FRAMES)
    result = subprocess.run(
        [other, os.path.join(HERE, "test_numpy_majors.py"), DATA] + names,
        env=python_env(),
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    theirs = json.loads(result.stdout)
    ours = digests(DATA, names)
    assert theirs["numpy"].split(".")[0] == "1", theirs["numpy"]
    for name in names:
        assert ours[name] == theirs[name], (name, ours[name], theirs[name])
    print(
        f"numpy {ours['numpy']} and {theirs['numpy']}: {len(names)} frames bitwise identical:",
        ", ".join(f"{n} flux {ours[n]['flux'][2][:12]}" for n in names),
    )


if __name__ == "__main__":
    print(json.dumps(digests(sys.argv[1], sys.argv[2:])))
