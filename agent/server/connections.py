"""Slow clients on a public port: a read deadline per request and a cap on open connections.

uvicorn's HTTP protocol times out only idle keep-alive connections; a client that opens a
connection and sends nothing (or declares 1000 bytes and sends 10) held it forever, and
every such connection was accepted.  This protocol adds two rules:

* a request must be complete (headers and body) within ``read_timeout`` seconds of the
  connection opening, else the connection is closed;
* at most ``max_connections`` connections are open: when one more arrives, the oldest
  connection still sending its request is closed to make room.  A connection whose request
  is complete (waiting for its reply: a PLAY being thought about) is never closed, and if
  every open connection is such a one, the new connection is refused instead.

A game manager writes each request at once and then waits, so it is never the oldest
*incomplete* connection for long: slow clients cannot lock it out.
"""
from __future__ import annotations

import logging
import time

from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger("ggp.server")


def guarded_protocol(read_timeout: float, max_connections: int) -> type:
    """An ``H11Protocol`` class with these limits (uvicorn takes the class as ``http=``)."""

    class GuardedH11Protocol(H11Protocol):
        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self.opened_at = time.monotonic()
            self.request_complete = False
            self.read_timer = self.loop.call_later(read_timeout, self._read_timed_out)
            if len(self.connections) > max_connections:
                self._make_room()

        def _make_room(self) -> None:
            reading = [c for c in self.connections
                       if c is not self and not getattr(c, "request_complete", True)]
            if reading:
                victim = min(reading, key=lambda c: c.opened_at)
                log.warning("%d connections open (cap %d): closing the oldest one still sending its "
                            "request (%s, open %.1fs)", len(self.connections), max_connections,
                            _peer(victim), time.monotonic() - victim.opened_at)
                victim._close()
            else:
                log.warning("%d connections open (cap %d), all waiting for replies: refusing %s",
                            len(self.connections), max_connections, _peer(self))
                self._close()

        def _read_timed_out(self) -> None:
            if not self.request_complete:
                log.warning("closing %s: no complete request within %.0fs", _peer(self), read_timeout)
                self._close()

        def _close(self) -> None:
            self.read_timer.cancel()
            self.request_complete = True  # nothing more to evict here
            self.transport.abort()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.scope is not None:
                # When the connection opened: the manager's clock started no later than this
                # (a loaded machine may run the endpoint much later).
                self.scope.setdefault("ggp.opened_at", self.opened_at)
            if not self.request_complete and self.cycle is not None and not self.cycle.more_body:
                self.request_complete = True
                self.read_timer.cancel()

        def connection_lost(self, exc) -> None:
            timer = getattr(self, "read_timer", None)
            if timer is not None:
                timer.cancel()
            super().connection_lost(exc)

    return GuardedH11Protocol


def _peer(protocol) -> str:
    client = getattr(protocol, "client", None)
    return f"{client[0]}:{client[1]}" if client else "a client"
