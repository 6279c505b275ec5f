"""Wire helpers of the ACL tests (test_acls.py, test_cluster_acls.py): a raw connection from a
chosen loopback source address (an ACL's host), kafka-python's protocol classes sent over it, and
hand-built frames of the APIs kafka-python 2.0.2 lacks. Each returns the error code the broker
answered for the (first) resource.
"""
import io
import socket
import struct

from itutil import RawConn, array32, bytes32, str16, uvarint
from kafka.protocol.admin import CreateAclsRequest


class SourceConn(RawConn):
    """A raw connection from a chosen loopback source address (the probed principal's host)."""

    def __init__(self, port, source, timeout=10):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout,
                                             source_address=(source, 0))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.corr = 0


def sasl_plain(conn, user, password):
    """Authenticates a raw connection to a SASL listener with PLAIN (SaslHandshake v1, then
    SaslAuthenticate v0); returns the SaslAuthenticate error code."""
    r = conn.request(17, 1, str16("PLAIN"))
    err = r.i16()
    if err:
        return err
    r = conn.request(36, 0, bytes32(b"\0" + user.encode() + b"\0" + password.encode()))
    return r.i16()


def kp_call(conn, req):
    """Sends a kafka-python protocol request over a raw connection; returns its decoded response."""
    r = conn.request(req.API_KEY, req.API_VERSION, req.encode())
    return req.RESPONSE_TYPE.decode(io.BytesIO(r.data[r.pos:]))


# ---------------------------------------------------------------- raw frames kafka-python lacks

def init_producer_id(conn, transactional_id=None):
    r = conn.request(22, 0, str16(transactional_id) + struct.pack(">i", 60000))
    r.i32()
    return r.i16()


def delete_records(conn, topic, partition, offset):
    body = array32([str16(topic) + array32([struct.pack(">iq", partition, offset)])])
    r = conn.request(21, 0, body + struct.pack(">i", 10000))
    r.i32()
    for _ in range(r.i32()):
        r.str16()
        for _ in range(r.i32()):
            r.i32(), r.i64()
            return r.i16()


def describe_client_quotas(conn):
    r = conn.request(48, 0, array32([]) + b"\x00")
    r.i32()
    return r.i16()


def list_reassignments(conn):
    r = conn.request(46, 0, struct.pack(">i", 10000) + uvarint(0) + uvarint(0), flexible=True)
    r.i32()
    return r.i16()


def offset_for_leader_epoch(conn, topic):
    body = array32([str16(topic) + array32([struct.pack(">iii", 0, -1, 0)])])
    r = conn.request(23, 2, body)
    r.i32()
    r.i32()
    r.str16()
    r.i32()
    return r.i16()


def replica_fetch(conn, topic):
    """Fetch v4 as a follower (replica_id 1) would send it."""
    body = struct.pack(">iiiib", 1, 0, 1, 1 << 20, 0)
    body += array32([str16(topic) + array32([struct.pack(">iqi", 0, 0, 1 << 20)])])
    r = conn.request(1, 4, body)
    r.i32()
    r.i32()
    r.str16()
    r.i32()
    r.i32()
    return r.i16()


def alter_client_quotas(conn):
    entity = array32([str16("client-id") + str16("acl-probe")])
    ops = array32([str16("producer_byte_rate") + struct.pack(">d?", 1000.0, False)])
    r = conn.request(49, 0, array32([entity + ops]) + b"\x01")  # validate_only
    r.i32()
    r.i32()
    return r.i16()


def elect_leaders(conn, topic):
    body = array32([str16(topic) + array32([struct.pack(">i", 0)])]) + struct.pack(">i", 10000)
    r = conn.request(43, 0, body)
    r.i32()
    r.i32()
    r.str16()
    r.i32()
    r.i32()
    return r.i16()


def incremental_alter_configs(conn, topic):
    cfg = array32([str16("retention.ms") + struct.pack(">b", 0) + str16("86400000")])
    r = conn.request(44, 0, array32([struct.pack(">b", 2) + str16(topic) + cfg]) + b"\x01")
    r.i32()
    r.i32()
    return r.i16()


def offset_delete(conn, group, topic):
    r = conn.request(47, 0, str16(group) + array32([str16(topic) + array32([struct.pack(">i", 0)])]))
    err = r.i16()
    r.i32()
    if err:
        return err
    r.i32()
    r.str16()
    r.i32()
    r.i32()
    return r.i16()


def acl_creations(conn, creations):
    """CreateAcls v1 from a probe connection: the per-creation error codes."""
    resp = kp_call(conn, CreateAclsRequest[1](creations))
    return [c[0] for c in resp.creation_responses]
