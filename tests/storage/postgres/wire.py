"""A relay in front of the test cluster's socket that counts round trips: what a client waits
for on the wire, which the statements a store sends do not show (a transaction's ``BEGIN`` and
``COMMIT``, a pipeline's statements going together)."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from urllib.parse import quote

from tests.postgres import USER, PostgresCluster

SOCKET = ".s.PGSQL.5432"


class Wire:
    """Relays every connection made to :meth:`url` to the cluster, counting in ``trips`` each
    time a client speaks after the server answered it."""

    def __init__(self, cluster: PostgresCluster, folder: Path) -> None:
        self._target = str(cluster.socket_dir / SOCKET)
        self._folder = folder
        self._writers: list[asyncio.StreamWriter] = []
        self.trips = 0

    def url(self, database: str) -> str:
        return f"postgresql://{USER}@/{database}?host={quote(str(self._folder))}"

    async def relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server_reader, server_writer = await asyncio.open_unix_connection(self._target)
        self._writers += [writer, server_writer]
        answered = True

        async def upstream() -> None:
            nonlocal answered
            while data := await reader.read(65536):
                if answered:
                    self.trips += 1
                    answered = False
                server_writer.write(data)
                await server_writer.drain()
            server_writer.close()

        async def downstream() -> None:
            nonlocal answered
            while data := await server_reader.read(65536):
                answered = True
                writer.write(data)
                await writer.drain()
            writer.close()

        with contextlib.suppress(ConnectionError):
            await asyncio.gather(upstream(), downstream())

    async def close(self) -> None:
        """Close every relayed connection."""
        for writer in self._writers:
            writer.close()
            with contextlib.suppress(ConnectionError):
                await writer.wait_closed()


@contextlib.asynccontextmanager
async def wire(cluster: PostgresCluster) -> AsyncIterator[Wire]:
    """A :class:`Wire` listening in a folder of its own (a socket's path is short)."""
    folder = Path(tempfile.mkdtemp(prefix="wire-"))
    relay = Wire(cluster, folder)
    server = await asyncio.start_unix_server(relay.relay, path=str(folder / SOCKET))
    try:
        yield relay
    finally:
        server.close()
        await relay.close()
        await server.wait_closed()
        shutil.rmtree(folder, ignore_errors=True)
