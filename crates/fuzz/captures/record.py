#!/usr/bin/env python3
"""Records what clients send: listens on 127.0.0.1:<listen>, forwards every connection
to <target>, and writes each connection's client -> server bytes to <prefix>-<n>.bin.
Usage: record.py LISTEN_PORT TARGET_HOST:PORT PREFIX"""
import socket, sys, threading

listen_port, target, prefix = int(sys.argv[1]), sys.argv[2], sys.argv[3]
host, port = target.rsplit(":", 1)
count = [0]

def pump(src, dst, sink):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            if sink is not None:
                sink.write(data)
                sink.flush()
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)
        except OSError:
            pass

srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", listen_port))
srv.listen(16)
while True:
    c, _ = srv.accept()
    n = count[0]
    count[0] += 1
    s = socket.create_connection((host, int(port)))
    sink = open(f"{prefix}-{n}.bin", "wb")
    threading.Thread(target=pump, args=(c, s, sink), daemon=True).start()
    threading.Thread(target=pump, args=(s, c, None), daemon=True).start()
