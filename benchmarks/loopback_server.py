"""A loopback search service for the concurrency benchmark: every answer after a fixed latency.

``python -m benchmarks.loopback_server LATENCY_S`` prints its port on stdout, then serves
Elasticsearch-shaped JSON (``{"hits": {"hits": [{"_id": ...}]}}``) until it is terminated. It is
asyncio in its own process, so requests wait their latency side by side without stealing the
client's interpreter: what the benchmark measures is the client.
"""

from __future__ import annotations

import asyncio
import json
import sys

BODY = json.dumps({"hits": {"hits": [{"_id": f"d{i}"} for i in range(12)]}}).encode()
RESPONSE = (
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
    + str(len(BODY)).encode()
    + b"\r\n\r\n"
    + BODY
)


async def _serve(latency_s: float) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        await reader.readexactly(int(line.split(b":", 1)[1]))
                await asyncio.sleep(latency_s)
                writer.write(RESPONSE)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=256)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    asyncio.run(_serve(float(sys.argv[1])))
