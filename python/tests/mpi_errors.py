"""Run under mpirun (3 ranks) by test_mpi.py: errors cross ranks as their class and message.
Prints "ok" on rank 0 when every case held on every rank."""

import sys

import perfex
import perfex.exposure
import perfex.files
from mpi4py import MPI
from perfex.collective import RankError, agree, on_root

comm = MPI.COMM_WORLD
rank = comm.rank
psf_path, image_path, tmp = sys.argv[1:4]


def raised(call):
    try:
        call()
    except Exception as e:
        return e
    raise AssertionError("nothing raised")


# prepare() failing on rank 0: every rank raises its class with its message.
e = raised(lambda: on_root(comm, lambda: int("x")))
assert type(e) is ValueError and "invalid literal" in str(e), repr(e)
e = raised(lambda: perfex.extract_frame(None if rank else 3.5, None, psf_path, comm=comm))
assert type(e) is TypeError, repr(e)
e = raised(
    lambda: perfex.extract_frame(
        perfex.read_preproc(image_path) if rank == 0 else None, None, psf_path, comm=comm, nspec=600, progress=False
    )
)
assert type(e) is perfex.RequestError and "the PSF has 500 fibres" in str(e), repr(e)

# A failure on one rank but 0: its class on every rank; failures of several classes: perfex.Error.
e = raised(lambda: agree(comm, RankError.of(KeyError("k")) if rank == 1 else None))
assert type(e) is KeyError, repr(e)
e = raised(lambda: agree(comm, RankError.of(perfex.RequestError("refused")) if rank else None))
assert type(e) is perfex.RequestError and str(e) == "refused; refused", repr(e)
mixed = {1: perfex.RequestError("a"), 2: perfex.Error("b")}
e = raised(lambda: agree(comm, RankError.of(mixed[rank]) if rank in mixed else None))
assert type(e) is perfex.Error and str(e) == "a; b", repr(e)
mixed = {1: ValueError("a"), 2: KeyError("b")}
e = raised(lambda: agree(comm, RankError.of(mixed[rank]) if rank in mixed else None))
assert type(e) is perfex.Error, repr(e)


# A class that pickle cannot send: a perfex.Error naming it.
class Local(Exception):
    pass


e = raised(lambda: on_root(comm, lambda: (_ for _ in ()).throw(Local("here"))))
assert type(e) in (Local, perfex.Error), repr(e)

# An exposure over rank groups: every rank gets each failed frame's exception, by class.
frames = [
    perfex.files.FrameFiles(image_path, psf_path, f"{tmp}/ok.fits"),
    perfex.files.FrameFiles(f"{tmp}/missing.fits", psf_path, f"{tmp}/missing-out.fits"),
    perfex.files.FrameFiles(image_path, psf_path, f"{tmp}/refused.fits"),
]
failed = perfex.exposure.extract_frames(frames[:2], comm, wavelength="5760,5800,0.8", nspec=5, psferr=0.01)
assert [(f.output, type(e)) for f, e in failed] == [(frames[1].output, perfex.Error)], failed
failed = perfex.exposure.extract_frames(frames[2:], comm, wavelength="5760,5800,0.8", nspec=600)
assert [type(e) for _, e in failed] == [perfex.RequestError], failed
if rank == 0:
    print("ok")
