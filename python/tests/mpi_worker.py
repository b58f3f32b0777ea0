"""Run under mpirun by test_mpi.py: one frame through perfex.extract_frame(comm=...) and through
the gpu_specter drop-in, only rank 0 holding the inputs (as desispec's IO coordinator does).
Rank 0 saves both results (float64) to OUT.npz."""

import sys

import numpy as np
from mpi4py import MPI

import perfex
import perfex.gpu_specter

from conftest import SMALL

comm = MPI.COMM_WORLD
image_path, psf_path, out = sys.argv[1:4]
pre = psf = img = None
if comm.rank == 0:
    pre = perfex.read_preproc(image_path)
    psf = perfex.read_psf(psf_path)
    img = {"image": pre.pixels, "ivar": pre.ivar}
frame = perfex.extract_frame(pre, None, psf, comm=comm, progress=False, **SMALL)
drop_in = perfex.gpu_specter.extract_frame(img, psf, 25, SMALL["specmin"], SMALL["nspec"],
                                           SMALL["wavelength"] if comm.rank == 0 else None,
                                           nsubbundles=5, psferr=0.01, comm=comm)
if comm.rank == 0:
    arrays = {name: getattr(frame, name) for name in
              ("flux", "ivar", "mask", "wave", "resolution", "chi2pix", "pixmask_fraction")}
    arrays.update({"drop_in_" + k: v for k, v in drop_in.items() if v is not None})
    np.savez(out, npatches=frame.npatches, **arrays)
else:
    assert frame is None and drop_in is None
