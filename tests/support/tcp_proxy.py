"""A TCP forwarder on loopback that a test can take down and bring back: a database
outage (connections cut, new ones refused) without touching the real server; the
``proxy`` fixture (one in front of the test's database) and POSTGRES_ONLY, the backend
parameter of the tests that cut it (SQLite has no connection to cut)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from contextlib import suppress

import pytest
from sqlalchemy.engine import make_url

POSTGRES_ONLY = [pytest.param("postgresql", marks=pytest.mark.postgres)]


class TcpProxy:
    """Forwards ``127.0.0.1:port`` to ``target``. ``down()`` closes the listening
    socket and every forwarded connection (clients see resets, then refusals);
    ``up()`` listens on the same port again."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._lock = threading.Lock()
        self._sockets: set[socket.socket] = set()
        self._listener: socket.socket | None = None
        self.port = 0
        self.up()

    def url_for(self, database_url: str) -> str:
        """``database_url`` pointed at this proxy."""
        url = make_url(database_url).set(host="127.0.0.1", port=self.port)
        return url.render_as_string(hide_password=False)

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self.port = listener.getsockname()[1]
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            cut, self._sockets = self._sockets, set()
        if listener is not None:
            _close(listener)
        for sock in cut:
            _close(sock)

    def close(self) -> None:
        self.down()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # closed by down()
            try:
                server = socket.create_connection(self._target)
            except OSError:
                _close(client)
                continue
            with self._lock:
                if self._listener is not listener:  # went down meanwhile
                    _close(client)
                    _close(server)
                    return
                self._sockets |= {client, server}
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pipe, args=(source, sink), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        finally:
            with self._lock:
                self._sockets -= {source, sink}
            _close(source)
            _close(sink)


def _close(sock: socket.socket) -> None:
    with suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with suppress(OSError):
        sock.close()


@pytest.fixture(name="proxy")
def proxy_fixture(db_url: str) -> Iterator[TcpProxy]:
    url = make_url(db_url)
    tcp = TcpProxy(url.host or "127.0.0.1", url.port or 5432)
    yield tcp
    tcp.close()
