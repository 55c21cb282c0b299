#!/usr/bin/env python3
"""A TLS-terminating local listener (issue 34): HTTPS on 127.0.0.1 with a certificate and
key (PEM), every connection's bytes forwarded unchanged to a plain HTTP server on
127.0.0.1:BACKEND_PORT, one backend connection per client connection. For measuring a
server that speaks only HTTP (vLLM) over HTTPS. Python standard library only.

usage: tls_front.py CERT KEY BACKEND_PORT [LISTEN_PORT]
Prints `listening on https://127.0.0.1:PORT` first (LISTEN_PORT 0 or absent: a free port).
"""

import asyncio
import socket
import ssl
import sys


async def pipe(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
    except (ConnectionError, ssl.SSLError, OSError):
        pass
    finally:
        try:
            writer.close()
        except (ConnectionError, OSError):
            pass


async def main(cert, key, backend, port):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ctx.set_alpn_protocols(["http/1.1"])

    async def handle(client_r, client_w):
        try:
            back_r, back_w = await asyncio.open_connection("127.0.0.1", backend)
        except OSError:
            client_w.close()
            return
        back_w.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await asyncio.gather(pipe(client_r, back_w), pipe(back_r, client_w))

    server = await asyncio.start_server(handle, "127.0.0.1", port, ssl=ctx, backlog=1024)
    print(f"listening on https://127.0.0.1:{server.sockets[0].getsockname()[1]}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    listen = int(sys.argv[4]) if len(sys.argv) == 5 else 0
    try:
        asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), listen))
    except KeyboardInterrupt:
        pass
