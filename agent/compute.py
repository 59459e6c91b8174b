"""The compute backend shared by fitting and playtesting: one task function over many tasks.

`run_tasks(fn, tasks)` runs a top-level (picklable) function on each task and returns the
results in task order. By default the tasks go to a local process pool; with
`scheduler="tcp://HOST:8786"` they go to a Dask distributed cluster. Tasks carry their own
seeds, so the results are the same on either backend and for any number of workers.

Worker processes are started with "spawn": a forked child would inherit the parent's Prolog
engine and numba threads, which is not safe. The pool is kept for the next call (started
workers keep their imports and loaded kernels). `workers=0` runs in this process (tests,
debugging). A task that raises stops the run: pending tasks are cancelled and a TaskError
names the task. Ctrl-C cancels pending tasks and re-raises KeyboardInterrupt after every
finished result has been handed to `on_result`, so callers that checkpoint there lose
nothing.
"""
from __future__ import annotations

import atexit
import ctypes
import multiprocessing
import os
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any, Callable, Sequence

from rich.console import Console
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                           TimeElapsedColumn, TimeRemainingColumn)


class TaskError(RuntimeError):
    """A task raised; `index` is its position in the task list."""

    def __init__(self, index: int, error: BaseException):
        super().__init__(f"task {index} failed: {type(error).__name__}: {error}")
        self.index = index
        self.error = error


def default_workers() -> int:
    return max(1, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
               else (os.cpu_count() or 1))


def _progress(description: str, total: int, enabled: bool) -> Progress:
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TimeElapsedColumn(), TimeRemainingColumn(),
                    console=Console(stderr=True), disable=not enabled)


def run_tasks(fn: Callable[[Any], Any], tasks: Sequence, *, scheduler: str | None = None,
              workers: int | None = None, description: str = "",
              on_result: Callable[[int, Any], None] | None = None,
              progress: bool | None = None) -> list:
    """Run fn(task) for every task; results in task order (see the module docstring)."""
    tasks = list(tasks)
    results: list = [None] * len(tasks)
    if progress is None:
        progress = sys.stderr.isatty()

    def done(i: int, value: Any) -> None:
        results[i] = value
        if on_result is not None:
            on_result(i, value)

    with _progress(description or "tasks", len(tasks), progress) as bar:
        handle = bar.add_task(description or "tasks", total=len(tasks))
        if not tasks:
            return results
        if scheduler:
            _run_dask(fn, tasks, scheduler, done, lambda: bar.advance(handle))
        elif workers == 0:
            for i, task in enumerate(tasks):
                try:
                    value = fn(task)
                except Exception as e:
                    raise TaskError(i, e) from e
                done(i, value)
                bar.advance(handle)
        else:
            _run_pool(fn, tasks, max(1, min(workers or default_workers(), len(tasks))), done,
                      lambda: bar.advance(handle))
    return results


_POOLS: dict[int, ProcessPoolExecutor] = {}


def _die_with_parent() -> None:
    """Pool worker initializer: on Linux, end this worker when the process that started it
    dies (a killed fit left its workers searching for an hour otherwise)."""
    if sys.platform.startswith("linux"):
        try:
            ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, int(signal.SIGTERM))   # PR_SET_PDEATHSIG
        except OSError:      # no libc by that name: the worker ends when it next reads its queue
            pass


def _pool(workers: int) -> ProcessPoolExecutor:
    """One pool per size, kept across calls: a GA generation after another would otherwise
    pay the start of every worker (imports, numba's cached kernels) each time."""
    pool = _POOLS.get(workers)
    if pool is None:
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_die_with_parent)
        _POOLS[workers] = pool
    return pool


def shutdown_pools() -> None:
    """End the kept worker processes (at exit, and after an interrupted or broken run)."""
    while _POOLS:
        _, pool = _POOLS.popitem()
        pool.shutdown(wait=True, cancel_futures=True)


atexit.register(shutdown_pools)


def _run_pool(fn, tasks, workers, done, advance) -> None:
    pool = _pool(workers)
    pending = {}
    clean = False
    try:
        pending = {pool.submit(fn, t): i for i, t in enumerate(tasks)}
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                i = pending.pop(fut)
                try:
                    value = fut.result()
                except BrokenProcessPool as e:  # a worker died (killed, out of memory)
                    raise TaskError(i, e) from e
                except Exception as e:
                    for other in pending:
                        other.cancel()
                    clean = True  # the pool itself is sound; queued tasks are cancelled
                    raise TaskError(i, e) from e
                done(i, value)
                advance()
        clean = True
    finally:
        if not clean:  # interrupted or broken: running tasks must not outlive the call
            for fut in pending:
                fut.cancel()
            shutdown_pools()


def _run_dask(fn, tasks, scheduler, done, advance) -> None:
    try:
        from distributed import Client, as_completed   # an optional backend, loaded only when asked for
    except ImportError as e:  # an optional backend: say what to install
        raise RuntimeError("the Dask backend needs dask[distributed] installed") from e
    try:
        client = Client(scheduler, timeout="20s")
    except OSError as e:
        raise RuntimeError(f"cannot reach the Dask scheduler at {scheduler}: {e}") from e
    futures = []
    try:
        # pure=False: two equal tasks are still two runs (they may be repeated seeds on purpose).
        futures = client.map(fn, tasks, pure=False)
        index = {f.key: i for i, f in enumerate(futures)}
        for fut in as_completed(futures):
            i = index[fut.key]
            try:
                value = fut.result()
            except Exception as e:
                raise TaskError(i, e) from e
            done(i, value)
            advance()
    finally:
        if futures:
            client.cancel(futures)
        client.close()


class local_dask_cluster:
    """A real Dask cluster on this machine for tests and benchmarks: a scheduler and
    ``n_workers`` single-threaded workers, each a process of its own (``dask scheduler``,
    ``dask worker``), on 127.0.0.1; ``with local_dask_cluster(2) as address:``."""

    def __init__(self, n_workers: int, *, cwd=None, env=None, timeout: float = 120.0):
        self.n_workers, self.cwd, self.env, self.timeout = n_workers, cwd, env, timeout
        self.procs: list = []

    def __enter__(self) -> str:
        dask = Path(sys.executable).with_name("dask")
        if not dask.is_file():
            raise RuntimeError("the dask command (dask[distributed]) is not installed in this environment")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        address = f"tcp://127.0.0.1:{port}"
        quiet = dict(cwd=self.cwd, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(subprocess.Popen([str(dask), "scheduler", "--host", "127.0.0.1", "--port", str(port),
                                            "--no-dashboard"], **quiet))
        try:
            for _ in range(self.n_workers):
                self.procs.append(subprocess.Popen([str(dask), "worker", address, "--nthreads", "1",
                                                    "--nworkers", "1", "--no-dashboard"], **quiet))
            from distributed import Client   # (as above)
            deadline = time.monotonic() + self.timeout
            while True:
                try:
                    with Client(address, timeout="5s") as c:
                        c.wait_for_workers(self.n_workers, timeout=self.timeout)
                    return address
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(1)
        except BaseException:
            self.__exit__()
            raise

    def __exit__(self, *exc) -> None:
        for p in reversed(self.procs):
            p.terminate()
        for p in self.procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        self.procs = []
