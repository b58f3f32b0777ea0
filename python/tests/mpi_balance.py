"""Run under mpirun by test_mpi.py: one frame on every rank of COMM_WORLD, each rank recording
the patches it solved and its CPU and wall time inside the call. Rank 0 saves the frame and the
per-rank records to OUT.npz. Further arguments: "model" (the frame's model image too),
"grid=WMIN,WMAX,DW" (default 5760,6160,0.8)."""

import resource
import sys
import time

import numpy as np
import perfex
import perfex.mpi
from mpi4py import MPI

comm = MPI.COMM_WORLD
image_path, psf_path, out, specmin, nspec = sys.argv[1:6]
model = "model" in sys.argv[6:]
grid = next((a[5:] for a in sys.argv[6:] if a.startswith("grid=")), "5760,6160,0.8")
pre = psf = None
if comm.rank == 0:
    pre = perfex.read_preproc(image_path)
    psf = perfex.read_psf(psf_path)
perfex.initialize(1)


def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


comm.Barrier()
wall0, cpu0 = time.perf_counter(), cpu()
work = {}
frame = perfex.mpi.extract_over_ranks(
    comm,
    pre,
    None,
    psf,
    progress=False,
    work=work,
    wavelength=grid,
    specmin=int(specmin),
    nspec=int(nspec),
    psferr=0.01,
    model_image=model,
)
record = (work["patches"], cpu() - cpu0, time.perf_counter() - wall0)
records = comm.gather(record, root=0)
if comm.rank == 0:
    np.savez(
        out,
        flux=frame.flux,
        ivar=frame.ivar,
        mask=frame.mask,
        wave=frame.wave,
        resolution=frame.resolution,
        chi2pix=frame.chi2pix,
        pixmask_fraction=frame.pixmask_fraction,
        npatches=frame.npatches,
        records=np.array(records, dtype=np.float64),
        **({"model": frame.model} if model else {}),
    )
