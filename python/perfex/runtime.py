"""The Kokkos runtime of the process: started once (threads chosen here), finalized at exit.

A process forked after the runtime started (os.fork, multiprocessing's 'fork' start method)
cannot use it: the runtime's threads exist only in the parent. There every perfex call raises
perfex.Error saying so, and the child exits normally.
"""

import atexit
import logging
import os
import time
import warnings

from . import _perfex

log = logging.getLogger("perfex")

_threads = None  # host threads the runtime was started with

MAX_HOST_THREADS = _perfex.MAX_HOST_THREADS


def backends():
    """Execution spaces of this build, the preferred (default) one first."""
    return list(_perfex.backends())


def default_backend(gpu=True):
    """The first backend of this build (CUDA where built, else OpenMP, else Serial);
    gpu=False skips CUDA."""
    return _perfex.default_backend(gpu)


def check_backend(name, what="backend"):
    """name, unless it is not one of this build's backends (perfex.RequestError)."""
    _perfex.check_backend(name, what)
    return name


def _local_ranks(comm):
    """MPI ranks on this node: from the launcher's environment (no communication), else from
    the communicator (collective: every rank of comm must be here)."""
    for var in ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE"):
        value = os.environ.get(var, "")
        if value.isdigit() and int(value) > 0:
            return int(value)
    if comm is not None and comm.size > 1:
        from mpi4py import MPI

        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        try:
            return node.size
        finally:
            node.Free()
    return 1


def rank_threads(comm=None):
    """Host threads for one process: OMP_NUM_THREADS when set (capped by the runtime), else its
    share of the node's cores among the node's MPI ranks (never more than the cores it may run
    on), else None (Kokkos' default: every core, at most MAX_HOST_THREADS)."""
    if os.environ.get("OMP_NUM_THREADS", "").isdigit():
        return None  # the runtime reads it, and caps it with a warning
    local = _local_ranks(comm)
    if local <= 1:
        return None
    allowed = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(allowed, MAX_HOST_THREADS, (os.cpu_count() or 1) // local))


def initialize(threads=None, comm=None):
    """Starts the perfex (Kokkos) runtime once per process and returns its host thread count.

    threads: host threads (OpenMP), at most MAX_HOST_THREADS (512: Kokkos' OpenMP thread table;
    more is a perfex.RequestError); None chooses (see rank_threads; an OMP_NUM_THREADS above
    512 is capped, with a warning). Later calls return the running count; asking then for
    another count warns (Kokkos cannot change it). comm: the MPI communicator the process
    extracts in, to count the node's ranks (optional).
    """
    global _threads
    if _perfex.is_initialized():
        if _perfex.is_forked_child():
            _perfex.initialize(0)  # raises: the runtime's threads are in the parent
        if threads is not None and threads != _threads:
            warnings.warn(
                f"perfex: the runtime already runs {_threads} host threads; threads={threads} "
                "is ignored (choose it in the first call, or with perfex.initialize)",
                stacklevel=3,
            )
        return _threads
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise _perfex.RequestError(f"threads must be a positive integer, got {threads!r}")
    if threads is None:
        threads = rank_threads(comm)
    capped = _perfex.initialize(threads or 0)
    if capped:
        log.warning("%s", capped)
        warnings.warn(f"perfex: {capped}", stacklevel=3)
    atexit.register(_perfex.finalize)
    host = [b for b in backends() if b != "cuda"]
    _threads = _perfex.concurrency(host[0]) if host else 1
    log.debug("perfex runtime: backends %s, %d host threads", backends(), _threads)
    return _threads


class ProgressLog:
    """Progress of an extraction to the 'perfex' logger: about every 10 % of the patches."""

    def __init__(self, label="extract"):
        self.label = label
        self.start = time.perf_counter()
        self.next_fraction = 0.1

    def __call__(self, done, total):
        if total <= 0 or done < total * self.next_fraction and done < total:
            return
        self.next_fraction = (done // max(1, total // 10) + 1) / 10
        seconds = time.perf_counter() - self.start
        rate = done / seconds if seconds > 0 else 0.0
        log.info("%s: %d/%d patches (%.0f %%), %.1f patches/s", self.label, done, total,
                 100.0 * done / total, rate)
