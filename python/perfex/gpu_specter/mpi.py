"""gpu_specter.mpi's IO coordinators: which ranks read, process and write (desispec's
main_gpu_specter takes one). The same classes, methods, rank roles, messages and results."""

from abc import ABC, abstractmethod


class AbstractIOCoordinator(ABC):
    """Coordinates the read / process / write steps of a program; the subclasses set the
    reader, writer and first worker ranks."""

    @classmethod
    def is_reader(cls, rank):
        return rank == cls._read_rank

    @classmethod
    def is_writer(cls, rank):
        return rank == cls._write_rank

    @classmethod
    def is_worker_root(cls, rank):
        return rank == cls._worker_root

    @classmethod
    def is_worker(cls, rank):
        return rank >= cls._worker_root

    @abstractmethod
    def read(self, func, payload):
        """Reads input via func() (payload: what the other ranks return)."""

    @abstractmethod
    def process(self, func, payload):
        """Returns func() on the workers, payload elsewhere."""

    @abstractmethod
    def write(self, func, payload):
        """Writes output by calling func(payload) on the writer."""


class NoMPIIOCoordinator(AbstractIOCoordinator):
    """Everything on this process."""

    _read_rank = _write_rank = _worker_root = 0

    def __init__(self):
        self.comm, self.rank, self.size, self.work_comm = None, 0, 1, None

    def read(self, func, payload):
        return func()

    def process(self, func, payload):
        return func()

    def write(self, func, payload):
        return func(payload)


class SerialIOCoordinator(AbstractIOCoordinator):
    """Rank 0 of comm reads and writes; every rank processes (work_comm = comm). The other
    ranks do not wait for the reads and writes; they return the payload."""

    _read_rank = _write_rank = _worker_root = 0

    def __init__(self, comm):
        self.comm, self.rank, self.size, self.work_comm = comm, comm.rank, comm.size, comm

    def read(self, func, payload):
        return func() if self.is_reader(self.rank) else payload

    def process(self, func, payload):
        return func() if self.is_worker(self.rank) else payload

    def write(self, func, payload):
        return func(payload) if self.is_writer(self.rank) else payload


class ParallelIOCoordinator(AbstractIOCoordinator):
    """Rank 0 reads, rank 1 writes, ranks 2.. process (work_comm, None on ranks 0 and 1), so
    that reading and writing one frame overlap the processing of another. Needs at least 3
    ranks (AssertionError otherwise, as gpu_specter's assert)."""

    _read_rank, _write_rank, _worker_root = 0, 1, 2

    def __init__(self, comm):
        self.comm, self.rank, self.size = comm, comm.rank, comm.size
        if self.size < 3:
            raise AssertionError("ParallelIOCoordinator requires at least 3 MPI ranks")
        self.work_comm = None
        group = comm.group.Excl([self._read_rank, self._write_rank])
        if self.is_worker(self.rank):
            self.work_comm = comm.Create_group(group)

    def read(self, func, payload):
        """The reader's func() goes to the worker root, which returns it; the other ranks
        (the reader too) return payload at once."""
        if self.is_reader(self.rank):
            self.comm.send(func(), dest=self._worker_root, tag=1)
        elif self.is_worker_root(self.rank):
            return self.comm.recv(source=self._read_rank, tag=1)
        return payload

    def process(self, func, payload):
        return func() if self.is_worker(self.rank) else payload

    def write(self, func, payload):
        """The worker root sends its payload to the writer once the writer is ready (the
        writer's own payload is that signal, and what the worker root returns); the writer
        returns func(received payload); the other ranks return payload."""
        if self.is_worker_root(self.rank):
            ready = self.comm.recv(source=self._write_rank, tag=2)
            self.comm.send(payload, dest=self._write_rank, tag=3)
            return ready
        if self.is_writer(self.rank):
            self.comm.send(payload, dest=self._worker_root, tag=2)
            return func(self.comm.recv(source=self._worker_root, tag=3))
        return payload
