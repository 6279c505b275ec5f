"""Kafka framing over TCP: one blocking connection, the request/response headers, and the few
Kafka APIs the client needs besides the extension keys (Metadata v4).

Requests to the extension keys (16000-16099) use request header v2 (api_key, api_version,
correlation_id, client_id as a nullable int16 string, an empty tagged-field section) and are
answered with response header v1 (correlation_id, an empty tagged-field section) followed by one
Protobuf message (docs/pk-tables.md, "Extension API"). Metadata v4 is not flexible: request header
v1 (no tagged fields) and response header v0 (correlation_id only).
"""
from __future__ import annotations

import socket
import struct
import threading
from typing import Callable, Dict, List, Optional, Tuple

from .errors import ConnectionLost, StrataError

API_METADATA = 3
METADATA_VERSION = 4  # non-flexible, and has allow_auto_topic_creation (v4+): never creates
EXT_FIRST, EXT_LAST = 16000, 16099
MAX_FRAME = 256 << 20  # refuse absurd response sizes rather than allocate them


def _str16(s: Optional[str]) -> bytes:
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode("utf-8")
    return struct.pack(">h", len(b)) + b


def request_frame(api_key: int, version: int, corr: int, client_id: Optional[str], body: bytes,
                  flexible: bool) -> bytes:
    """A whole request: int32 size, header v1 (v2 with an empty tagged-field section when
    `flexible`), then `body`."""
    hdr = struct.pack(">hhi", api_key, version, corr) + _str16(client_id)
    if flexible:
        hdr += b"\x00"
    payload = hdr + body
    return struct.pack(">i", len(payload)) + payload


class Reader:
    """Big-endian reader over a response body (the non-flexible Kafka types)."""

    __slots__ = ("data", "pos")

    def __init__(self, data: bytes, pos: int = 0) -> None:
        self.data = data
        self.pos = pos

    def take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.data):
            raise StrataError(2, "response truncated at byte %d (+%d of %d)" % (
                self.pos, n, len(self.data)))  # CORRUPT_MESSAGE
        b = self.data[self.pos:self.pos + n]
        self.pos += n
        return b

    def i8(self) -> int:
        return struct.unpack(">b", self.take(1))[0]

    def i16(self) -> int:
        return struct.unpack(">h", self.take(2))[0]

    def i32(self) -> int:
        return struct.unpack(">i", self.take(4))[0]

    def str16(self) -> Optional[str]:
        n = self.i16()
        return None if n < 0 else self.take(n).decode("utf-8")

    def array(self, fn: Callable[[], object]) -> List:
        n = self.i32()
        return [] if n < 0 else [fn() for _ in range(n)]

    def tagged(self) -> None:
        """Skips a tagged-field section (unsigned varint count, then tag/size/bytes)."""
        for _ in range(self.uvarint()):
            self.uvarint()
            self.take(self.uvarint())

    def uvarint(self) -> int:
        shift = result = 0
        while True:
            b = self.take(1)[0]
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7


class Connection:
    """One TCP connection to one broker. Not shared by threads at the same time: the pool
    (client._Pool) leases it to one caller at a time; `lock` guards it anyway."""

    def __init__(self, host: str, port: int, client_id: Optional[str], timeout: float) -> None:
        self.host, self.port = host, port
        self.client_id = client_id
        self.timeout = timeout
        self.lock = threading.Lock()
        self.corr = 0
        self.broken = False
        try:
            self.sock = socket.create_connection((host, port), timeout=timeout)
        except OSError as e:
            raise ConnectionLost("cannot connect: %s" % e, "%s:%d" % (host, port)) from None
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def close(self) -> None:
        self.broken = True
        try:
            self.sock.close()
        except OSError:
            pass

    def _recv_exact(self, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = self.sock.recv(min(n - len(buf), 1 << 20))
            if not chunk:
                raise ConnectionError("connection closed by the broker after %d of %d bytes" %
                                      (len(buf), n))
            buf += chunk
        return bytes(buf)

    def call(self, api_key: int, version: int, body: bytes, flexible: bool,
             extra_timeout: float = 0.0) -> Reader:
        """Sends one request and returns a Reader positioned at the response body. Any socket
        failure closes the connection (it cannot be reused: a late response would be misread)
        and raises ConnectionLost. `extra_timeout`: seconds beyond the connection's timeout (a
        long poll's wait)."""
        where = "%s:%d" % (self.host, self.port)
        with self.lock:
            if self.broken:
                raise ConnectionLost("connection already closed", where)
            self.corr = (self.corr + 1) & 0x7FFFFFFF
            corr = self.corr
            try:
                self.sock.settimeout(self.timeout + extra_timeout)
                self.sock.sendall(request_frame(api_key, version, corr, self.client_id, body,
                                                flexible))
                size = struct.unpack(">i", self._recv_exact(4))[0]
                if size < 4 or size > MAX_FRAME:
                    raise ConnectionError("bad response size %d" % size)
                data = self._recv_exact(size)
            except (OSError, ConnectionError) as e:
                self.close()
                raise ConnectionLost(str(e) or type(e).__name__, where) from None
            r = Reader(data)
            got = r.i32()
            if got != corr:
                self.close()
                raise ConnectionLost("correlation id %d, expected %d" % (got, corr), where)
            if flexible:
                r.tagged()
            return r

    def call_ext(self, api_key: int, request, response_cls, extra_timeout: float = 0.0):
        """One extension API call (keys 16000-16099): a Protobuf request message in, the parsed
        response message out."""
        assert EXT_FIRST <= api_key <= EXT_LAST
        r = self.call(api_key, 0, request.SerializeToString(), flexible=True,
                      extra_timeout=extra_timeout)
        resp = response_cls()
        try:
            resp.ParseFromString(r.data[r.pos:])
        except Exception as e:  # google.protobuf.message.DecodeError
            raise StrataError(2, "undecodable %s: %s" % (response_cls.__name__, e)) from None
        return resp


class Metadata:
    """What a Metadata v4 answer says: brokers by node id, and per topic its error code and
    partition leaders."""

    def __init__(self) -> None:
        self.brokers: Dict[int, Tuple[str, int]] = {}
        self.controller_id = -1
        self.topics: Dict[str, Tuple[int, Dict[int, int]]] = {}  # name -> (error, {p: leader})


def metadata(conn: Connection, topics: Optional[List[str]]) -> Metadata:
    """Metadata v4 with allow_auto_topic_creation=false; `topics` None = all topics.

    Request v4: topics (nullable int32 array of int16 strings), allow_auto_topic_creation (bool).
    Response v4: throttle_time_ms, brokers [node_id, host, port, rack (nullable)], cluster_id
    (nullable), controller_id, topics [error_code, name, is_internal, partitions [error_code,
    partition_index, leader_id, replica_nodes [int32], isr_nodes [int32]]].
    """
    if topics is None:
        body = struct.pack(">i", -1)
    else:
        body = struct.pack(">i", len(topics)) + b"".join(_str16(t) for t in topics)
    body += b"\x00"  # allow_auto_topic_creation = false
    r = conn.call(API_METADATA, METADATA_VERSION, body, flexible=False)
    out = Metadata()
    r.i32()  # throttle_time_ms
    for _ in range(max(r.i32(), 0)):
        node_id, host, port = r.i32(), r.str16(), r.i32()
        r.str16()  # rack
        out.brokers[node_id] = (host or "", port)
    r.str16()  # cluster_id
    out.controller_id = r.i32()
    for _ in range(max(r.i32(), 0)):
        err, name = r.i16(), r.str16() or ""
        r.i8()  # is_internal
        leaders: Dict[int, int] = {}
        for _ in range(max(r.i32(), 0)):
            r.i16()  # partition error
            index, leader = r.i32(), r.i32()
            r.array(r.i32)  # replicas
            r.array(r.i32)  # isr
            leaders[index] = leader
        out.topics[name] = (err, leaders)
    return out
