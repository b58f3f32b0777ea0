"""What the MPI drivers share (mpi4py communicators handed in by the caller): dealing work over
ranks, waiting without spinning, and errors that cross ranks with their class.

An error on one rank must stop every rank, or the others wait forever in the next collective:
every decision that could end a rank early is agreed on (agree, on_root) before such a
collective. Errors travel as their class and message (RankError) and are raised again on every
rank as the same class: a perfex.RequestError on rank 0 is a perfex.RequestError on rank 5."""

import pickle
import time

import numpy as np

from ._perfex import Error

# How long a waiting rank sleeps between two looks at its pending MPI operation.
POLL_SECONDS = 0.001


def deal(costs, size, root_overhead=0.0):
    """Contiguous ranges of items with the given costs over size ranks, of about equal total
    cost, rank 0's reduced by root_overhead (a share of the whole; rank 0 gets none when that
    exceeds its share): rank r gets [start[r], start[r+1]). Ranks beyond the items get empty
    ranges."""
    costs = np.asarray(costs, dtype=np.float64)
    if costs.size == 0:
        return [0] * (size + 1)
    root = max(0.0, 1.0 / size - root_overhead) if size > 1 else 1.0
    shares = np.concatenate(([0.0, root], root + (1.0 - root) * np.arange(1, size) / max(1, size - 1)))
    cumulative = np.concatenate(([0.0], np.cumsum(costs)))
    start = np.searchsorted(cumulative, cumulative[-1] * shares[: size + 1], side="left")
    start = np.clip(start, 0, costs.size)
    start[0], start[-1] = 0, costs.size
    return [int(s) for s in np.maximum.accumulate(start)]


def wait_idle(request):
    """Completes an mpi4py request, sleeping between tests (no busy wait); returns its result."""
    while not request.Test():
        time.sleep(POLL_SECONDS)
    return request.wait() if hasattr(request, "wait") else None


def idle_barrier(comm):
    """A barrier where waiting ranks sleep instead of spinning."""
    wait_idle(comm.Ibarrier())


class RankError:
    """An exception as it crosses ranks: its class (sent by reference, as pickle sends classes)
    and its message. exception() builds it again as the same class, or as a perfex.Error naming
    the class when the class cannot be sent or built from a message alone."""

    def __init__(self, cls, message):
        try:
            pickle.loads(pickle.dumps(cls))
        except Exception:
            cls, message = Error, f"{cls.__name__}: {message}"
        self.cls, self.message = cls, message

    @classmethod
    def of(cls, exception, message=None):
        """The exception's class with its message (or `message` instead)."""
        return cls(type(exception), str(exception) if message is None else message)

    def exception(self):
        try:
            return self.cls(self.message)
        except Exception:
            return Error(f"{self.cls.__name__}: {self.message}")

    def __repr__(self):
        return f"RankError({self.cls.__name__}: {self.message})"


def _common_class(classes):
    """The class to raise for failures of these classes: their one class, else the most derived
    perfex.Error they all are (a perfex.RequestError and a perfex.Error: perfex.Error), else
    perfex.Error."""
    if len(set(classes)) == 1:
        return classes[0]
    for cls in classes[0].__mro__:
        if issubclass(cls, Error) and all(issubclass(c, cls) for c in classes):
            return cls
    return Error


def agree(comm, error):
    """Raises on every rank when any rank has an error (a RankError, or None), so that no rank
    waits in a collective: as the class every failure shares (a refused request everywhere is a
    perfex.RequestError), else as a perfex.Error, with the messages joined by "; "."""
    idle_barrier(comm)
    errors = [e for e in comm.allgather(error) if e is not None]
    if errors:
        cls = _common_class([e.cls for e in errors])
        raise RankError(cls, "; ".join(e.message for e in errors)).exception()


def root_only(comm, prepare):
    """prepare() on rank 0 (of comm; comm None: this process) and its result there, None on the
    other ranks; an exception there is raised on every rank as the same class with its message,
    none waiting forever."""
    if comm is None or comm.size == 1:
        return prepare()
    result, error = None, None
    if comm.rank == 0:
        try:
            result = prepare()
        except Exception as e:
            error = RankError.of(e)
    idle_barrier(comm)
    error = comm.bcast(error, root=0)
    if error is not None:
        raise error.exception()
    return result


def on_root(comm, prepare):
    """prepare() on rank 0 and its result on every rank (root_only's, broadcast)."""
    result = root_only(comm, prepare)
    return result if comm is None or comm.size == 1 else comm.bcast(result, root=0)


def pack_blocks(array, blocks):
    """The bins of patch blocks (out_fibre0, nkeepfib, kf0, nkeep) of a [nspec][nwave] or
    [nspec][ndiags][nwave] frame array, block after block, as one flat array."""
    parts = [array[f0 : f0 + nf, ..., k0 : k0 + nk].ravel() for f0, nf, k0, nk in blocks]
    return np.concatenate(parts) if parts else np.empty(0, dtype=array.dtype)


def unpack_blocks(flat, blocks, out):
    """pack_blocks' inverse: the bins of flat into their blocks of out."""
    pos = 0
    for f0, nf, k0, nk in blocks:
        target = out[f0 : f0 + nf, ..., k0 : k0 + nk]
        target[...] = flat[pos : pos + target.size].reshape(target.shape)
        pos += target.size
    return out
