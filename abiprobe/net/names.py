"""Host names looked up once for an HTTP client's life: one lookup for all the connections to an index.

A solve opens sixteen connections to an index at once; looked up one by one, each is another chance for a
resolver that drops a query to stall the run for its timeout (5 s with the usual resolver settings).
Lookups of one name at the same time wait for the first. A name the resolver says does not exist stays
unknown for the client's life, as asking again would not help; any other failure (a temporary one among
them) is not kept: the next connection asks again.
"""

from __future__ import annotations

import socket
import threading
from concurrent.futures import Future


class HostNames:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._known: dict[tuple[str, int], Future[list[str]]] = {}

    def addresses(self, host: str, port: int) -> list[str]:
        """The addresses of ``host`` in the resolver's order; raises what the resolver raised."""
        with self._lock:
            known = self._known.get((host, port))
            first = known is None
            if known is None:
                known = self._known[(host, port)] = Future()
        if not first:
            return known.result()
        try:
            found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except BaseException as exc:  # whatever it is (a name IDNA cannot encode too): no waiter hangs
            if not _does_not_exist(exc):
                with self._lock:
                    del self._known[(host, port)]
            known.set_exception(exc)
            raise
        known.set_result(list(dict.fromkeys(str(info[4][0]) for info in found)))
        return known.result()

    def unresolved(self, host: str, port: int) -> str | None:
        """The resolver's words when ``host`` does not resolve; None when it does (or failed otherwise:
        the connection attempt then says what it is)."""
        try:
            self.addresses(host, port)
        except socket.gaierror as exc:
            return str(exc)
        except (OSError, UnicodeError):
            return None
        return None


def _does_not_exist(exc: BaseException) -> bool:
    """The resolver's "no such name" (or no address for it), not a failure to ask it."""
    final = {socket.EAI_NONAME, getattr(socket, "EAI_NODATA", socket.EAI_NONAME)}
    return isinstance(exc, socket.gaierror) and exc.errno in final
