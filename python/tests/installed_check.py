"""An installed perfex imports from where it went and extracts with its own data (the PSF it
carries for gpu_specter's tests). python/tests/install_routes.sh and scripts/test-pythons.sh run
it after each install, from outside any source tree:

    python installed_check.py ROUTE SITE

ROUTE names the install in the message; SITE is the folder the package must come from."""

import os
import sys

import numpy
import perfex


def main(route, site):
    package = os.path.dirname(perfex.__file__)
    assert package.startswith(site), (package, site)
    assert os.path.exists(os.path.join(package, "py.typed")), "py.typed not installed"
    perfex.initialize(1)
    psf = perfex.read_psf(os.path.join(package, "gpu_specter", "test", "data", "psf-r0-00051060.fits"))
    light = numpy.full((psf.npix_y, psf.npix_x), 10.0)
    frame = perfex.extract_frame(
        light,
        numpy.full_like(light, 0.1),
        psf,
        wavelength="5760,5800,0.8",
        specmin=0,
        nspec=5,
        psferr=0.01,
        progress=False,
    )
    assert frame.npatches == 10 and frame.failed_patches == 0 and numpy.all(frame.ivar > 0), frame
    print(
        f"installed_check: perfex {perfex.__version__} ({route}) from {package} with numpy "
        f"{numpy.__version__} extracted {frame}"
    )


if __name__ == "__main__":
    main(*sys.argv[1:3])
