"""An installed perfex imports from where it went and extracts with its own data (the PSF it
carries for gpu_specter's tests). python/tests/install_routes.sh and scripts/test-pythons.sh run
it after each install, from outside any source tree:

    python installed_check.py ROUTE SITE

ROUTE names the install in the message; SITE is the folder the package must come from."""

import os
import subprocess
import sys
import sysconfig

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
    if os.path.realpath(package).startswith(os.path.realpath(sys.prefix)):  # pip's, into an environment
        check_console_scripts()
    print(
        f"installed_check: perfex {perfex.__version__} ({route}) from {package} with numpy "
        f"{numpy.__version__} extracted {frame}"
    )


def check_console_scripts():
    """pip install puts the Python commands next to the interpreter, and they run."""
    for name in ("perfex_extract_spectra", "perfex_plot"):
        command = os.path.join(sysconfig.get_path("scripts"), name)
        r = subprocess.run([command, "--version"], capture_output=True, text=True)
        assert r.returncode == 0 and r.stdout.startswith(f"perfex {perfex.__version__}\nKokkos "), (command, r)


if __name__ == "__main__":
    main(*sys.argv[1:3])
