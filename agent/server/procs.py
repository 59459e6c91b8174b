"""Worker processes seen from the server's event loop.

Each process has a pipe; a reader thread turns incoming messages into calls on the event
loop, a sender thread writes outgoing ones, so the loop never blocks on a pipe (a START can
carry megabytes of rules while the worker is still busy).  A small pool of pre-started
processes makes a START cost a pipe message instead of an interpreter start.
"""
from __future__ import annotations

import asyncio
import logging
import multiprocessing
import queue
import threading
from concurrent.futures import ThreadPoolExecutor

from . import worker

log = logging.getLogger("ggp.server")

_CTX = multiprocessing.get_context("spawn")  # fork would copy the server's threads and loop
# Starting a process blocks for tens of milliseconds (more on a loaded machine): done on one
# helper thread, never on the event loop, one at a time.
_SPAWNER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spawn")


class Proc:
    """One worker process; ``on_message(msg)`` is called on the event loop for each message,
    and with ``("exit", exitcode)`` when the process is gone."""

    def __init__(self, loop: asyncio.AbstractEventLoop, nice: int = 0, log_level: int = logging.INFO,
                 full_warm: bool = True, limits: dict | None = None):
        self.loop = loop
        parent, child = _CTX.Pipe(duplex=True)
        self.process = _CTX.Process(target=worker.proc_main,
                                    args=(child, nice, log_level, full_warm, limits), daemon=True)
        self.process.start()
        child.close()
        self.conn = parent
        self.on_message = None
        self.on_warm = None       # called with the number of functions the warm-up compiled
        self.warm = asyncio.Event()
        self._backlog: list = []
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()
        self.alive = True
        threading.Thread(target=self._read, daemon=True, name=f"read-{self.process.pid}").start()
        threading.Thread(target=self._write, daemon=True, name=f"write-{self.process.pid}").start()

    @property
    def pid(self):
        return self.process.pid

    def _read(self) -> None:
        while True:
            try:
                msg = self.conn.recv()
            except (EOFError, OSError):
                break
            except Exception as e:  # an unpicklable message: report, keep reading
                msg = ("crashed", f"bad message from worker: {e}")
            try:
                self.loop.call_soon_threadsafe(self._deliver, msg)
            except RuntimeError:  # loop closed
                return
        try:
            self.process.join(timeout=5)
        except Exception:
            pass
        try:
            self.loop.call_soon_threadsafe(self._deliver, ("exit", self.process.exitcode))
        except RuntimeError:
            pass

    def _write(self) -> None:
        while True:
            msg = self._outbox.get()
            if msg is None:
                return
            try:
                self.conn.send(msg)
            except (OSError, EOFError, ValueError):
                return

    def _deliver(self, msg) -> None:
        if msg[0] == "warm":
            if self.on_warm is None or self.on_warm(self, msg[2]):   # (warm, pid, compiled)
                self.warm.set()
            return
        if msg[0] == "exit":
            self.alive = False
        if self.on_message is None:
            self._backlog.append(msg)
        else:
            self.on_message(msg)

    def attach(self, handler) -> None:
        self.on_message = handler
        backlog, self._backlog = self._backlog, []
        for msg in backlog:
            handler(msg)

    def send(self, msg) -> None:
        if self.alive:
            self._outbox.put(msg)

    def kill(self) -> None:
        """Stop at once and free everything (SIGKILL: a search need not be interrupted politely)."""
        self.alive = False
        self._outbox.put(None)
        try:
            if self.process.is_alive():
                self.process.kill()
        except Exception:
            pass


class Pool:
    """Keeps ``size`` idle, warmed processes ready.  ``full_warm``: run the engine and the
    search once (players); referees only need Prolog.

    The first warm-up after an install compiles the numba code (minutes) and the process
    keeps the compiler's memory: a player then searched chess at 1,067 MB where one that
    loaded the same code from the cache used 251 MB.  That process is replaced, once per
    pool, by one that loads what it compiled (about a second); a cache that cannot be
    written would only compile again, so the second is kept whatever it did."""

    def __init__(self, size: int, nice: int = 0, log_level: int = logging.INFO, full_warm: bool = True,
                 limits: dict | None = None):
        self.size = size
        self.limits = limits
        self.full_warm = full_warm
        self.nice = nice
        self.log_level = log_level
        self.spares: list[Proc] = []
        self.loop = None
        self.closed = False
        self.renewed = False

    def start(self, loop) -> None:
        self.loop = loop
        self._filling = False
        self._fill()

    def _fill(self) -> None:
        if not self._filling and not self.closed and len(self.spares) < self.size:
            self._filling = True
            self.loop.create_task(self._fill_async())

    async def _fill_async(self) -> None:
        try:
            while not self.closed and len(self.spares) < self.size:
                p = await self._spawn(self.full_warm)
                if self.closed:
                    p.kill()
                    return
                p.attach(lambda msg, p=p: self._spare_message(p, msg))
                p.on_warm = self._keep_warmed
                self.spares.append(p)
        except Exception as e:
            log.error("cannot start a worker process: %s", e)
        finally:
            self._filling = False

    async def _spawn(self, full_warm: bool) -> Proc:
        return await self.loop.run_in_executor(
            _SPAWNER, lambda: Proc(self.loop, self.nice, self.log_level, full_warm, self.limits))

    def _keep_warmed(self, p: Proc, compiled: int) -> bool:
        """Whether ``p``, just warm, stays a spare (else it is replaced: see the class)."""
        if not compiled or self.renewed or p not in self.spares or self.closed:
            return True
        self.renewed = True
        log.info("worker %s compiled %d functions in its warm-up; replaced by one that loads "
                 "them from the cache (compiling leaves its memory behind)", p.pid, compiled)
        self.spares.remove(p)
        p.kill()
        self._fill()
        return False

    def _spare_message(self, p: Proc, msg) -> None:
        if msg[0] == "exit" and p in self.spares:
            log.warning("a spare worker process %s exited (code %s)", p.pid, msg[1])
            self.spares.remove(p)
            if not self.closed:
                self.loop.call_later(1.0, self._fill)

    async def take(self) -> Proc:
        """A process for a match: a warm spare if there is one, else a new one.  A spare
        still in its warm-up run is left to finish it: a fresh process starts on the match's
        own work (legal moves first) at once, and loads the engine and search code during
        the start clock instead."""
        self.spares = [p for p in self.spares if p.alive and p.process.is_alive()]
        warm = [p for p in self.spares if p.warm.is_set()]
        if warm or (self.spares and not self.full_warm):
            # A referee's warm-up is only its imports and Prolog: the oldest spare still in
            # it is further on than a new process.  On a busy host a START just after the
            # server started spawned one more beside the warming spares, and the referee
            # had no legal move by the first PLAY, 12 s later.
            p = (warm or self.spares)[0]
            self.spares.remove(p)
            p.on_message = None
            self._fill()
            return p
        p = await self._spawn(False)
        self._fill()
        return p

    async def fresh(self) -> Proc:
        """A new process, leaving the spares to takers whose first answer is urgent.  A
        grounder's build takes seconds to minutes, and a process start is small beside it;
        a referee's first legal moves are the fallback of the first PLAY.  When grounders
        took spares, four matches started at once on a busy host left the fourth referee a
        fresh process that was ready 7 s after its START, and two PLAYs were answered nil."""
        return await self._spawn(False)

    async def wait_warm(self, timeout: float) -> bool:
        """Wait until a spare is warm (numba code loaded or compiled, and kept)."""
        async def first_warm():
            while not any(p.warm.is_set() for p in self.spares):
                await asyncio.sleep(0.05)
        try:
            await asyncio.wait_for(first_warm(), timeout)
            return True
        except asyncio.TimeoutError:
            return False

    def close(self) -> None:
        self.closed = True
        for p in self.spares:
            p.kill()
        self.spares.clear()
