"""The OpenMP runtimes of a process that imports perfex beside numpy (and numba), as
/proc/self/maps lists them: scripts/build-wheel.sh --test runs it under each wheel.

    python3 openmp_runtimes.py perfex,numpy | numpy,perfex | numba

perfex,numpy and numpy,perfex import the two in that order and extract a small frame (the PSF
the package carries, a flat image); exit status 1 unless exactly one OpenMP runtime is mapped.
numba (after those) runs a parallel numba function on numba's OpenMP threading layer between
two extractions and says what the process then holds: the runtimes mapped, its threads, and
whether the second frame is bitwise the first (exit status 1 if not).
"""

import os
import re
import sys

OPENMP = re.compile(r"/lib(gomp|iomp5|omp)[-.][^/]*$")


def openmp_runtimes():
    """The OpenMP runtime files mapped into this process."""
    with open("/proc/self/maps") as maps:
        return sorted({f[5] for f in (line.split() for line in maps) if len(f) >= 6 and OPENMP.search(f[5])})


def threads():
    return len(os.listdir("/proc/self/task"))


def extract():
    import numpy as np
    import perfex

    package = os.path.dirname(perfex.__file__)
    psf = perfex.read_psf(os.path.join(package, "gpu_specter", "test", "data", "psf-r0-00051060.fits"))
    light = np.full((psf.npix_y, psf.npix_x), 10.0)
    options = dict(wavelength="5760,5800,0.8", specmin=0, nspec=5, psferr=0.01, progress=False)
    return perfex.extract_frame(light, np.full_like(light, 0.1), psf, **options).flux


def main(mode):
    if mode in ("perfex,numpy", "numpy,perfex"):
        for name in mode.split(","):
            __import__(name)
        extract()
        runtimes = openmp_runtimes()
        print(f"import {mode.replace(',', ', ')}: {len(runtimes)} OpenMP runtime(s) {runtimes}, {threads()} threads")
        return 0 if len(runtimes) == 1 else 1
    import numpy as np

    before = extract()
    print(f"numpy + perfex: OpenMP runtimes {openmp_runtimes()}, {threads()} threads")
    import numba

    numba.config.THREADING_LAYER = "omp"

    @numba.njit(parallel=True)
    def total(values):
        result = 0.0
        for i in numba.prange(values.size):
            result += values[i]
        return result

    assert total(np.ones(1_000_000)) == 1_000_000
    print(
        f"+ numba {numba.__version__} ({numba.threading_layer()} layer, {numba.get_num_threads()} threads): "
        f"OpenMP runtimes {openmp_runtimes()}, {threads()} threads"
    )
    after = extract()
    same = np.array_equal(before.view(np.uint64), after.view(np.uint64))
    print(f"perfex after numba's parallel loop: frame {'bitwise the same' if same else 'DIFFERS'}, {threads()} threads")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
