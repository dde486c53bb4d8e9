"""A small RESP2 client over a raw socket, with pipelining."""

from __future__ import annotations

import socket

from .regimes import BenchError

class ReplyError(Exception):
    pass


def encode(args) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if not isinstance(a, bytes):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Client:
    def __init__(self, port: int, timeout: float = 60.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.reader = self.sock.makefile("rb")

    def close(self):
        try:
            self.reader.close()
            self.sock.close()
        except OSError:
            pass

    def _read(self):
        return self._value(self.reader.readline())

    def _value(self, line):
        """The reply whose first line is `line`."""
        if not line:
            raise ConnectionError("connection closed by the server")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return ReplyError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.reader.read(n + 2)
            return data[:-2]
        if kind == b"*":
            n = int(rest)
            if n < 0:
                return None
            # Integer elements (the limiters' replies) parsed in place.
            readline, out = self.reader.readline, []
            for _ in range(n):
                item = readline()
                out.append(int(item[1:-2]) if item[:1] == b":" else self._value(item))
            return out
        raise BenchError("unexpected RESP reply: %r" % line)

    def pipeline(self, commands, batch: int = 500):
        """Sends the commands in batches; returns the replies (errors as
        ReplyError values, not raised)."""
        return self.pipeline_encoded([encode(c) for c in commands], batch)

    def pipeline_encoded(self, commands, batch: int = 500):
        """`pipeline` of commands already encoded. The next batch is sent
        before the replies to this one are read, so that the server works
        while they are parsed."""
        replies = []
        chunks = [commands[i : i + batch] for i in range(0, len(commands), batch)]
        if chunks:
            self.sock.sendall(b"".join(chunks[0]))
        for i, chunk in enumerate(chunks):
            if i + 1 < len(chunks):
                self.sock.sendall(b"".join(chunks[i + 1]))
            replies.extend(self._read() for _ in chunk)
        return replies

    def call(self, *args):
        reply = self.pipeline([args])[0]
        if isinstance(reply, ReplyError):
            raise reply
        return reply

    def info(self, section: str) -> dict:
        text = self.call("INFO", section)
        fields = {}
        for line in text.decode().splitlines():
            if ":" in line and not line.startswith("#"):
                k, v = line.split(":", 1)
                fields[k] = v
        return fields

