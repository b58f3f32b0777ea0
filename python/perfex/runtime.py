"""The Kokkos runtime of the process: started once (threads chosen here), finalized at exit.

A process forked after the runtime started (os.fork, multiprocessing's 'fork' start method)
cannot use it: the runtime's threads exist only in the parent. There every perfex call raises
perfex.Error saying so, and the child exits normally.
"""

import atexit
import os
import time
import warnings

from . import _perfex
from .logs import log

_threads = None  # host threads the runtime was started with

MAX_HOST_THREADS = _perfex.MAX_HOST_THREADS


def backends():
    """The execution spaces of this build, the preferred (default) one first.

    Returns
    -------
    list of str
        Names among 'cuda', 'openmp' and 'serial'.
    """
    return list(_perfex.backends())


def default_backend(gpu=True):
    """The first backend of this build: CUDA where built, else OpenMP, else Serial.

    Parameters
    ----------
    gpu : bool, default True
        False skips CUDA.

    Returns
    -------
    str
    """
    return _perfex.default_backend(gpu)


def check_backend(name, what="backend"):
    """name, unless it is not one of this build's backends (perfex.RequestError)."""
    _perfex.check_backend(name, what)
    return name


def _node_position(comm, launcher_vars, attribute, minimum, default):
    """This process's `attribute` ("rank" or "size") among the node's MPI ranks: from the first
    of the launcher's variables that holds a number >= minimum (no communication), else from
    the communicator (collective: every rank of comm must be here), else `default`."""
    for var in launcher_vars:
        value = os.environ.get(var, "")
        if value.isdigit() and int(value) >= minimum:
            return int(value)
    if comm is not None and comm.size > 1:
        from mpi4py import MPI

        node = comm.Split_type(MPI.COMM_TYPE_SHARED)
        try:
            return getattr(node, attribute)
        finally:
            node.Free()
    return default


def _local_ranks(comm):
    """MPI ranks on this node."""
    return _node_position(comm, ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE"), "size", 1, 1)


def _local_rank(comm):
    """This process's rank among the node's MPI ranks."""
    return _node_position(
        comm,
        ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "PMI_LOCAL_RANK"),
        "rank",
        0,
        0,
    )


def device_plan(local_rank, local_size, ndevices, requested=None):
    """The GPU of one process of a node, and how many processes share it.

    The default memory budget of a GPU extraction is half the GPU's free memory divided among
    the processes sharing it.

    Parameters
    ----------
    local_rank, local_size : int
        The process's rank among the node's local_size MPI ranks.
    ndevices : int
        The node's GPUs.
    requested : int, optional
        A GPU the user chose (every local process may have made the same choice).

    Returns
    -------
    tuple of int
        (GPU, processes sharing it): the requested GPU, else local_rank modulo ndevices
        (gpu_specter's decompose_comm); (-1, 1) without GPUs.
    """
    device = _perfex.device_for_rank(local_rank, ndevices, -1 if requested is None else requested)
    if requested is not None and requested >= 0:
        # A user's choice: every local process may have made the same one.
        return device, max(1, local_size)
    return device, _perfex.ranks_sharing_device(device, local_size, ndevices)


def rank_threads(comm=None):
    """Host threads for one process, as initialize chooses them with threads=None.

    Parameters
    ----------
    comm : mpi4py.MPI.Comm, optional
        The communicator the process extracts in, to count the node's ranks when the
        launcher's variables do not (collective then: every rank of comm calls).

    Returns
    -------
    int or None
        None when KOKKOS_NUM_THREADS or OMP_NUM_THREADS is set (the runtime reads, checks and
        caps them); else the process's share of the node's cores among the node's MPI ranks
        (never more than the cores it may run on); else None (the CPUs the process may use,
        at most MAX_HOST_THREADS).
    """
    if any(os.environ.get(var, "").strip() for var in ("KOKKOS_NUM_THREADS", "OMP_NUM_THREADS")):
        return None
    local = _local_ranks(comm)
    if local <= 1:
        return None
    allowed = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min(allowed, MAX_HOST_THREADS, (os.cpu_count() or 1) // local))


def initialize(threads=None, comm=None, device=None):
    """Starts the perfex (Kokkos) runtime once per process and returns its host thread count.

    An extraction (and perfex.Image) starts it when needed; call it first to choose the
    threads or the GPU.
    Later calls return the running count; asking then for another count warns (Kokkos cannot
    change it). The runtime is finalized at exit.

    Parameters
    ----------
    threads : int, optional
        Host threads (OpenMP), at most MAX_HOST_THREADS (512: Kokkos' OpenMP thread table).
        None chooses (see rank_threads): KOKKOS_NUM_THREADS, else OMP_NUM_THREADS (above 512
        capped, with a warning), else the CPUs the process may use.
    comm : mpi4py.MPI.Comm, optional
        The MPI communicator the process extracts in, to count the node's ranks.
    device : int, optional
        On CUDA builds, the GPU to use; None deals the node's GPUs over its ranks
        (device_plan) and divides the default GPU memory budget among the ranks that share
        one.

    Returns
    -------
    int
        The host threads the runtime runs.

    Raises
    ------
    RequestError
        threads not a positive integer or above MAX_HOST_THREADS, or a bad thread variable
        (KOKKOS_NUM_THREADS=600, OMP_NUM_THREADS=abc, one that disagrees with threads),
        named, before the runtime starts.
    Error
        In a process forked after the runtime started (its threads are in the parent).
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
    gpu = -1
    ndevices = _perfex.cuda_device_count()
    if ndevices > 0:
        gpu, sharers = device_plan(_local_rank(comm), _local_ranks(comm), ndevices, device)
        _perfex.set_device_sharers(sharers)
        log.debug("perfex runtime: GPU %d of %d, shared by %d processes", gpu, ndevices, sharers)
    capped = _perfex.initialize(threads or 0, gpu)
    if capped:
        log.warning("%s", capped)
        warnings.warn(f"perfex: {capped}", stacklevel=3)
    atexit.register(_perfex.finalize)
    host = [b for b in backends() if b != "cuda"]
    _threads = _perfex.concurrency(host[0]) if host else 1
    log.debug("perfex runtime: backends %s, %d host threads", backends(), _threads)
    return _threads


class ProgressLog:
    """Progress of an extraction to perfex's logger, about every 10 % of the patches, with the
    rate and an estimate of the time left.

    Parameters
    ----------
    label : str
        What the lines start with (``"frame r0"``).
    share : str, optional
        Which share of the frame this process extracts, when the frame is spread over ranks
        (``"rank 0's share: patches 0-110 of 260"``); None: the whole frame.
    """

    def __init__(self, label="extract", share=None):
        self.label = label
        self.share = share
        self.start = time.perf_counter()
        self.next_fraction = 0.1

    def of_share(self, share):
        """The same log for a share of the frame (see the class)."""
        return ProgressLog(self.label, share)

    def __call__(self, done, total):
        if total <= 0 or done < total * self.next_fraction and done < total:
            return
        self.next_fraction = (done // max(1, total // 10) + 1) / 10
        seconds = time.perf_counter() - self.start
        rate = done / seconds if seconds > 0 else 0.0
        left = f", {duration_text((total - done) / rate)} left" if 0 < done < total and rate > 0 else ""
        of = f" of {self.share}" if self.share else ""
        log.info(
            "%s: %d/%d patches (%.0f %%)%s, %.1f patches/s%s",
            self.label,
            done,
            total,
            100.0 * done / total,
            of,
            rate,
            left,
        )


def duration_text(seconds):
    """A duration for a person: "under 1 s", "8 s", "3 min 20 s", "1 h 05 min"."""
    if seconds < 0.5:
        return "under 1 s"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min {seconds % 60} s"
    return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"


def add_version_option(parser):
    """--version on an argparse command: prints version_text(), unwrapped, and exits."""
    import argparse

    class Version(argparse.Action):
        def __call__(self, parser, namespace, values, option_string=None):
            print(version_text())
            parser.exit()

    parser.add_argument(
        "--version",
        nargs=0,
        action=Version,
        dest=argparse.SUPPRESS,  # no attribute on the parsed namespace, as argparse's own
        default=argparse.SUPPRESS,
        help="print the versions of perfex, Kokkos, the backends, numpy and Python",
    )


def version_text():
    """The commands' --version: the C++ tools' text (perfex's and Kokkos' versions, this build's
    backends, the default first), then numpy's and Python's versions, a line each."""
    import platform

    import numpy

    return f"{_perfex.version_text()}numpy {numpy.__version__}\nPython {platform.python_version()}"
