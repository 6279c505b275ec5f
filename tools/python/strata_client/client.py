"""The client: a connection pool per broker, Metadata-based routing, and the primary-key table
reads (Lookup 16000, PrefixLookup 16001, Scan 16002, ReadChangelog 16003, DescribeTable 16004,
LookupAsOf 16007). See docs/python-client.md."""
from __future__ import annotations

import contextlib
import json
import threading
import time
from typing import (Any, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple,
                    Union)

from . import _wire
from ._ext import describe_table_pb2 as _dt
from ._ext import lookup_as_of_pb2 as _asof
from ._ext import lookup_pb2 as _lk
from ._ext import prefix_lookup_pb2 as _pl
from ._ext import read_changelog_pb2 as _rc
from ._ext import scan_pb2 as _sc
from .errors import ConnectionLost, OutOfRetention, StrataError
from .partitioner import partition_for_key
from .predicate import parse_where
from ._reads import follow_reads, start_offsets
from .log_topic import LogTopic

__all__ = ["Strata", "Table", "ScanPage", "Key", "Row"]

API_LOOKUP, API_PREFIX_LOOKUP, API_SCAN = 16000, 16001, 16002
API_READ_CHANGELOG, API_DESCRIBE_TABLE, API_LOOKUP_AS_OF = 16003, 16004, 16007

# The broker's bounds of one Lookup/LookupAsOf request (docs/pk-tables.md): 100,000 keys and a
# 32 MiB body; the keys of one request stay under 30 MiB so that the framing fits too.
MAX_KEYS_PER_REQUEST = 100_000
MAX_KEY_BYTES_PER_REQUEST = 30 << 20
MAX_PAGE_ROWS = 10_000
# Retried once the metadata is refreshed: LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER, and a
# lost connection (reads are idempotent).
_RETRY_CODES = (5, 6, 13)
_ATTEMPTS = 3

Key = Union[str, bytes, bytearray, memoryview]
Row = Dict[str, Any]
Addr = Tuple[str, int]

_KINDS = {_rc.ReadChangelogResponse.INSERT: "insert", _rc.ReadChangelogResponse.UPDATE: "update",
          _rc.ReadChangelogResponse.DELETE: "delete"}
_TYPED_FORMATS = ("json", "confluent")


def _key_bytes(key: Key) -> bytes:
    if isinstance(key, str):
        return key.encode("utf-8")
    if isinstance(key, (bytes, bytearray, memoryview)):
        return bytes(key)
    raise TypeError("a key is str (UTF-8) or bytes, not %s" % type(key).__name__)


def _parse_bootstrap(bootstrap: Union[str, Sequence[str]]) -> List[Addr]:
    items = bootstrap.split(",") if isinstance(bootstrap, str) else list(bootstrap)
    out = []
    for item in items:
        item = item.strip()
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or not port.isdigit():
            raise ValueError("bootstrap address %r is not host:port" % item)
        out.append((host.strip("[]") or "127.0.0.1", int(port)))
    if not out:
        raise ValueError("no bootstrap address")
    return out


class _Pool:
    """Connections per broker address: a caller leases one for a request (or for a whole Scan,
    whose sessions are bound to their connection) and gives it back; idle ones are kept up to
    `max_idle` per broker. Thread-safe."""

    def __init__(self, client_id: Optional[str], timeout: float, max_idle: int) -> None:
        self._client_id = client_id
        self._timeout = timeout
        self._max_idle = max_idle
        self._lock = threading.Lock()
        self._idle: Dict[Addr, List[_wire.Connection]] = {}
        self._closed = False

    @contextlib.contextmanager
    def lease(self, addr: Addr) -> Iterator[_wire.Connection]:
        conn = None
        with self._lock:
            if self._closed:
                raise StrataError(-1, "the client is closed")
            idle = self._idle.get(addr)
            if idle:
                conn = idle.pop()
        if conn is None:
            conn = _wire.Connection(addr[0], addr[1], self._client_id, self._timeout)
        try:
            yield conn
        finally:
            with self._lock:
                idle = self._idle.setdefault(addr, [])
                keep = not conn.broken and not self._closed and len(idle) < self._max_idle
                if keep:
                    idle.append(conn)
            if not keep:
                conn.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            conns = [c for lst in self._idle.values() for c in lst]
            self._idle.clear()
        for c in conns:
            c.close()


class Strata:
    """A client of one Strata cluster (or single broker) for primary-key table reads.

    Thread-safe: any number of threads may share one instance and its tables. Use it as a
    context manager, or call :meth:`close`.

    Args:
        bootstrap: "host:port[,host:port...]" (or a list of them), tried in order.
        client_id: the Kafka client id sent in every request header.
        timeout: seconds for connecting and for each response (a long poll adds its wait).
        max_idle_per_broker: idle connections kept per broker (more are opened under load and
            closed when given back).
    """

    def __init__(self, bootstrap: Union[str, Sequence[str]] = "127.0.0.1:9092",
                 client_id: Optional[str] = "strata-python", timeout: float = 30.0,
                 max_idle_per_broker: int = 4) -> None:
        self._bootstrap = _parse_bootstrap(bootstrap)
        self._pool = _Pool(client_id, timeout, max_idle_per_broker)
        self._meta_lock = threading.Lock()
        self._brokers: Dict[int, Addr] = {}
        self._leaders: Dict[str, Dict[int, int]] = {}

    def __enter__(self) -> "Strata":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes every pooled connection; later calls raise StrataError."""
        self._pool.close()

    def table(self, name: str) -> "Table":
        """A handle on primary-key table `name` (nothing is sent until the first read)."""
        return Table(self, name)

    def log(self, name: str) -> "LogTopic":
        """A handle on log topic `name`, for ReadLog reads (strata_client/log_topic.py)."""
        return LogTopic(self, name)

    def _partition_count(self, topic: str) -> int:
        with self._meta_lock:
            leaders = self._leaders.get(topic)
        if leaders is None:
            self._refresh(topic)
            with self._meta_lock:
                leaders = self._leaders.get(topic, {})
        return len(leaders)

    # ---------------------------------------------------------------- connections, metadata

    def _call_bootstrap(self, fn):
        """fn(conn) on a connection to the first bootstrap broker that answers."""
        last: Optional[StrataError] = None
        for addr in self._bootstrap:
            try:
                with self._pool.lease(addr) as conn:
                    return fn(conn)
            except ConnectionLost as e:
                last = e
        assert last is not None
        raise last

    def _refresh(self, topic: str) -> None:
        md = self._call_bootstrap(lambda c: _wire.metadata(c, [topic]))
        with self._meta_lock:
            self._brokers.update(md.brokers)
            err, leaders = md.topics.get(topic, (3, {}))
            if err == 0:
                self._leaders[topic] = leaders
            else:
                self._leaders.pop(topic, None)
        if err != 0:
            raise StrataError(err, context="topic '%s'" % topic)

    def _invalidate(self, topic: str) -> None:
        with self._meta_lock:
            self._leaders.pop(topic, None)

    def _leader_addr(self, topic: str, partition: int) -> Addr:
        for attempt in range(2):
            with self._meta_lock:
                leaders = self._leaders.get(topic)
                leader = None if leaders is None else leaders.get(partition)
                addr = self._brokers.get(leader) if leader is not None else None
            if addr is not None:
                return addr
            if leaders is not None and leader is None:
                raise StrataError(3, context="table '%s' partition %d" % (topic, partition))
            if leader is not None and leader < 0:
                raise StrataError(5, context="table '%s' partition %d" % (topic, partition))
            if attempt == 0:
                self._refresh(topic)
        raise StrataError(8, context="leader of table '%s' partition %d" % (topic, partition))

    def _lease_leader(self, topic: str, partition: int):
        return self._pool.lease(self._leader_addr(topic, partition))


class ScanPage(list):
    """One page of a Scan: a list of rows, plus the partition and the scan's `snapshot_offset`
    (the snapshot holds every change below it: ReadChangelog from there continues it)."""

    def __init__(self, rows: Iterable[Row], partition: int, snapshot_offset: int) -> None:
        super().__init__(rows)
        self.partition = partition
        self.snapshot_offset = snapshot_offset


class Table:
    """Reads of one primary-key table. Get one from :meth:`Strata.table`.

    Rows are dicts ``{"key": bytes, "value": ..., "offset": int, "timestamp": int,
    "partition": int}``; ``value`` is ``bytes`` on raw tables and the decoded JSON object (a
    dict) on typed tables (``table.value.format`` json or confluent). Keys may be given as str
    (UTF-8) or bytes; rows always carry bytes. ``columns`` (typed tables only) projects each row
    to exactly those columns (a column the row lacks is None); on a raw table the broker answers
    INVALID_REQUEST.
    """

    def __init__(self, client: Strata, name: str) -> None:
        self._client = client
        self.name = name
        self._info: Optional[Dict[str, Any]] = None
        self._info_lock = threading.Lock()

    def __repr__(self) -> str:
        return "Table(%r)" % self.name

    # ---------------------------------------------------------------- DescribeTable

    def describe(self) -> Dict[str, Any]:
        """DescribeTable (16004): the table's settings and per-partition state, as a dict with
        topic, table_type, merge_engine, version_header, changelog_image, delete_behavior,
        ttl_ms, partitioner, partition_count, value_format, column_aggregations, value_schema
        (confluent tables: a dict of subject, id, type and columns; else None) and partitions
        (a list of dicts: partition, error_code, applied_offset, row_count_estimate,
        checkpoint_offset, changelog_gap_below, high_watermark). Also refreshes the cached
        settings used for routing and decoding."""
        req = _dt.DescribeTableRequest(topics=[self.name])
        resp = self._client._call_bootstrap(
            lambda c: c.call_ext(API_DESCRIBE_TABLE, req, _dt.DescribeTableResponse))
        if resp.error_code:
            raise StrataError(resp.error_code, resp.error_message, "DescribeTable")
        for t in resp.tables:
            if t.topic != self.name:
                continue
            if t.error_code:
                raise StrataError(t.error_code, t.error_message, "table '%s'" % self.name)
            info = {
                "topic": t.topic, "table_type": t.table_type, "merge_engine": t.merge_engine,
                "version_header": t.version_header, "changelog_image": t.changelog_image,
                "delete_behavior": t.delete_behavior, "ttl_ms": t.ttl_ms,
                "partitioner": t.partitioner or "murmur2",
                "partition_count": t.partition_count or len(t.partitions),
                "value_format": t.value_format or "raw",
                "column_aggregations": dict(t.column_aggregations),
                "value_schema": ({"subject": t.value_schema_subject, "id": t.value_schema_id,
                                  "type": t.value_schema_type, "columns": list(t.columns)}
                                 if t.value_format == "confluent" else None),
                "partitions": sorted(({
                    "partition": p.partition, "error_code": p.error_code,
                    "applied_offset": p.applied_offset,
                    "row_count_estimate": p.row_count_estimate,
                    "checkpoint_offset": p.checkpoint_offset,
                    "changelog_gap_below": p.changelog_gap_below,
                    "high_watermark": p.high_watermark} for p in t.partitions),
                    key=lambda p: p["partition"]),
            }
            if info["partition_count"] <= 0:
                raise StrataError(42, "the table has no partitions", "table '%s'" % self.name)
            partition_for_key(info["partitioner"], b"", 2)  # raises for an unknown name
            with self._info_lock:
                self._info = info
            return info
        raise StrataError(3, context="table '%s'" % self.name)

    def _settings(self) -> Dict[str, Any]:
        with self._info_lock:
            info = self._info
        return info if info is not None else self.describe()

    @property
    def typed(self) -> bool:
        """True when rows are JSON objects (value_format json or confluent)."""
        return self._settings()["value_format"] in _TYPED_FORMATS

    def _value(self, raw: bytes, typed: bool) -> Any:
        # Typed rows arrive as JSON from every read, the changelog of a confluent table too (the
        # broker removes the framing and decodes an Avro table schema's rows).
        return json.loads(raw) if typed else raw

    def _ctx(self, partition: Optional[int] = None) -> str:
        if partition is None:
            return "table '%s'" % self.name
        return "table '%s' partition %d" % (self.name, partition)

    def _retrying(self, fn):
        """fn() again (up to 3 times) after refreshing the metadata, when a leader moved or a
        connection was lost."""
        for attempt in range(_ATTEMPTS):
            try:
                return fn()
            except StrataError as e:
                if attempt + 1 == _ATTEMPTS or e.code not in _RETRY_CODES:
                    raise
                self._client._invalidate(self.name)
                time.sleep(0.05 * (attempt + 1))

    # ---------------------------------------------------------------- keyed reads

    def _route(self, keys: List[bytes]) -> Dict[Addr, List[Tuple[int, int]]]:
        """leader address -> [(partition, key index)] in partition, then request order."""
        info = self._settings()
        n, how = info["partition_count"], info["partitioner"]
        by_leader: Dict[Addr, List[Tuple[int, int]]] = {}
        addrs: Dict[int, Addr] = {}
        for i, k in enumerate(keys):
            p = partition_for_key(how, k, n)
            addr = addrs.get(p)
            if addr is None:
                addr = addrs[p] = self._client._leader_addr(self.name, p)
            by_leader.setdefault(addr, []).append((p, i))
        for todo in by_leader.values():
            todo.sort(key=lambda pi: pi[0])  # stable: request order within a partition
        return by_leader

    def _keyed_rounds(self, api_key: int, api_name: str, resp_cls, keys: List[bytes],
                      fill, take) -> None:
        """Each leader's keys in rounds, as the C++ client's keyed_rounds: a request takes what
        the broker's request bounds allow, and the keys an answer marks truncated (its byte
        budget was reached) go into the next round until none is left. fill(partition -> key
        indexes) builds a request; take(partition answer, row, key index) stores a row."""
        for addr, todo in self._route(keys).items():
            with self._client._pool.lease(addr) as conn:
                while todo:
                    sent: Dict[int, List[int]] = {}
                    n = size = 0
                    while n < len(todo) and n < MAX_KEYS_PER_REQUEST and (
                            n == 0 or size + len(keys[todo[n][1]]) <= MAX_KEY_BYTES_PER_REQUEST):
                        size += len(keys[todo[n][1]])
                        sent.setdefault(todo[n][0], []).append(todo[n][1])
                        n += 1
                    resp = conn.call_ext(api_key, fill(sent), resp_cls)
                    if resp.error_code:
                        raise StrataError(resp.error_code, resp.error_message, api_name)
                    nxt: List[Tuple[int, int]] = []
                    answered = served = 0
                    for tr in resp.topics:
                        for pr in tr.partitions:
                            if pr.error_code:
                                raise StrataError(pr.error_code, pr.error_message,
                                                  self._ctx(pr.partition))
                            idx = sent.get(pr.partition)
                            if idx is None or len(pr.rows) != len(idx):
                                raise StrataError(-1, "%s response does not match the request"
                                                  % api_name, self._ctx(pr.partition))
                            for row, i in zip(pr.rows, idx):
                                if row.truncated:
                                    nxt.append((pr.partition, i))
                                else:
                                    take(pr, row, i)
                                    served += 1
                            answered += 1
                    if answered != len(sent):
                        raise StrataError(-1, "%s response lacks partitions" % api_name,
                                          self._ctx())
                    if served == 0:  # a broker serving nothing would make this loop forever
                        raise StrataError(-1, "no progress (the broker served no key)",
                                          "%s of %s" % (api_name, self._ctx()))
                    nxt.extend(todo[n:])
                    nxt.sort(key=lambda pi: pi[0])
                    todo = nxt

    def get(self, key: Key, columns: Optional[Sequence[str]] = None) -> Optional[Row]:
        """Lookup (16000) of one key: its row, or None when absent."""
        return self.get_many([key], columns=columns)[0]

    def get_many(self, keys: Iterable[Key], columns: Optional[Sequence[str]] = None,
                 max_bytes: int = 0) -> List[Optional[Row]]:
        """Lookup (16000) of many keys, routed to each key's partition leader: a list aligned
        with `keys`, None where a key is absent. Keys the broker leaves out (its response byte
        budget: `max_bytes` of values per response, 0 = the broker's 16 MiB) are asked again in
        further rounds, so every key is answered."""
        kb = [_key_bytes(k) for k in keys]
        if not kb:
            return []
        cols = list(columns or [])

        def run() -> List[Optional[Row]]:
            out: List[Optional[Row]] = [None] * len(kb)
            typed = self.typed

            def fill(sent: Dict[int, List[int]]):
                req = _lk.LookupRequest(columns=cols, max_bytes=max_bytes)
                tk = req.topics.add(topic=self.name)
                for p, idx in sorted(sent.items()):
                    tk.partitions.add(partition=p, keys=[kb[i] for i in idx])
                return req

            def take(pr, row, i: int) -> None:
                if row.found:
                    out[i] = {"key": kb[i], "value": self._value(row.value, typed),
                              "offset": row.offset, "timestamp": row.timestamp,
                              "partition": pr.partition}

            self._keyed_rounds(API_LOOKUP, "Lookup", _lk.LookupResponse, kb, fill, take)
            return out

        return self._retrying(run)

    def as_of(self, pairs: Iterable[Tuple[Key, int]], by: str = "timestamp",
              columns: Optional[Sequence[str]] = None, dataframe: bool = False,
              max_bytes: int = 0) -> Any:
        """LookupAsOf (16007), tables with ``table.history.enabled=true``: for each (key, point)
        the row as of that point — the key's newest change (in log order) whose timestamp
        (``by="timestamp"``, ms) or offset (``by="offset"``) is at or before the point.

        Returns a list aligned with `pairs` of: a row dict (with ``"at"``, the point asked), None
        when the key was absent at the point, or an :class:`OutOfRetention` (falsy, carrying
        ``earliest``) when the table's history no longer covers the point. With
        ``dataframe=True`` the same as a pandas DataFrame (see :meth:`to_dataframe`). A table
        without history raises StrataError INVALID_REQUEST. Truncated keys (`max_bytes`, as
        get_many's) are asked again in further rounds."""
        if by not in ("timestamp", "offset"):
            raise ValueError('by is "timestamp" or "offset", not %r' % (by,))
        kind = (_asof.LookupAsOfRequest.OFFSET if by == "offset"
                else _asof.LookupAsOfRequest.TIMESTAMP)
        items = [(_key_bytes(k), int(at)) for k, at in pairs]
        kb = [k for k, _ in items]
        cols = list(columns or [])

        def run() -> List[Any]:
            out: List[Any] = [None] * len(items)
            typed = self.typed

            def fill(sent: Dict[int, List[int]]):
                req = _asof.LookupAsOfRequest(kind=kind, columns=cols, max_bytes=max_bytes)
                tk = req.topics.add(topic=self.name)
                for p, idx in sorted(sent.items()):
                    pk = tk.partitions.add(partition=p)
                    for i in idx:
                        pk.keys.add(key=items[i][0], at=items[i][1])
                return req

            def take(pr, row, i: int) -> None:
                if row.error_code == 1:
                    out[i] = OutOfRetention(items[i][0], items[i][1], row.earliest, pr.partition)
                elif row.error_code:
                    raise StrataError(row.error_code, "key %r at %d" % items[i],
                                      self._ctx(pr.partition))
                elif row.found:
                    out[i] = {"key": items[i][0], "at": items[i][1],
                              "value": self._value(row.value, typed), "offset": row.offset,
                              "timestamp": row.timestamp, "partition": pr.partition}

            if items:
                self._keyed_rounds(API_LOOKUP_AS_OF, "LookupAsOf", _asof.LookupAsOfResponse, kb,
                                   fill, take)
            return out

        rows = self._retrying(run)
        if dataframe:
            return self.to_dataframe(rows, keys=[k for k, _ in items],
                                     points=[at for _, at in items])
        return rows

    # ---------------------------------------------------------------- paged reads

    def prefix(self, prefix: Key, limit: Optional[int] = None,
               columns: Optional[Sequence[str]] = None, page_rows: int = 1000) -> Iterator[Row]:
        """PrefixLookup (16001): the rows whose key starts with `prefix`, from every partition
        (keys sharing a prefix can sit in any), partition by partition and in key order within
        one; at most `limit` rows in all (None = every match). Pages of `page_rows` (1..10000)
        are fetched lazily, following ``next_cursor``."""
        pb = _key_bytes(prefix)
        cols = list(columns or [])
        page_rows = max(1, min(int(page_rows), MAX_PAGE_ROWS))
        info = self._settings()
        typed = info["value_format"] in _TYPED_FORMATS
        left = None if limit is None else int(limit)
        for p in range(info["partition_count"]):
            cursor: Optional[bytes] = None
            while left is None or left > 0:
                want = page_rows if left is None else min(page_rows, left)

                def page(p: int = p, cursor: Optional[bytes] = cursor, want: int = want):
                    req = _pl.PrefixLookupRequest(topic=self.name, partition=p, prefix=pb,
                                                  limit=want, columns=cols)
                    if cursor is not None:
                        req.cursor = cursor
                    with self._client._lease_leader(self.name, p) as conn:
                        return conn.call_ext(API_PREFIX_LOOKUP, req, _pl.PrefixLookupResponse)

                resp = self._retrying(page)
                if resp.error_code:
                    raise StrataError(resp.error_code, resp.error_message, self._ctx(p))
                for r in resp.rows:
                    yield {"key": r.key, "value": self._value(r.value, typed),
                           "offset": r.offset, "timestamp": r.timestamp, "partition": p}
                if left is not None:
                    left -= len(resp.rows)
                if not resp.HasField("next_cursor"):
                    break
                if resp.next_cursor == cursor:
                    raise StrataError(-1, "no progress (the broker repeated its cursor)",
                                      self._ctx(p))
                cursor = resp.next_cursor
            if left is not None and left <= 0:
                return

    def scan(self, partition: Optional[int] = None, page_rows: int = 1000,
             columns: Optional[Sequence[str]] = None) -> Iterator[ScanPage]:
        """Scan (16002): every row of one partition (or of all, one after another, when
        `partition` is None), as pages (:class:`ScanPage`: a list of rows with ``partition`` and
        ``snapshot_offset``) of at most `page_rows` rows (1..10000), in key order, all pages of a
        partition from one snapshot. Each partition's pages go over one leased connection (the
        broker binds a scan session to the connection that opened it). A scan idle for longer
        than the broker's pk.scan.session.timeout.ms (30 s) between pages raises StrataError
        FETCH_SESSION_ID_NOT_FOUND: scan again."""
        cols = list(columns or [])
        page_rows = max(1, min(int(page_rows), MAX_PAGE_ROWS))
        info = self._settings()
        typed = info["value_format"] in _TYPED_FORMATS
        parts = range(info["partition_count"]) if partition is None else [int(partition)]
        for p in parts:
            yield from self._scan_partition(p, page_rows, cols, typed)

    def _scan_partition(self, p: int, page_rows: int, cols: List[str],
                        typed: bool) -> Iterator[ScanPage]:
        first = self._retrying(lambda: self._client._leader_addr(self.name, p))
        with self._client._pool.lease(first) as conn:
            cursor: Optional[bytes] = None
            while True:
                req = _sc.ScanRequest(topic=self.name, partition=p, limit=page_rows, columns=cols)
                if cursor is not None:
                    req.cursor = cursor
                resp = conn.call_ext(API_SCAN, req, _sc.ScanResponse)
                if resp.error_code:
                    if resp.error_code in (5, 6):
                        self._client._invalidate(self.name)
                    raise StrataError(resp.error_code, resp.error_message, self._ctx(p))
                yield ScanPage(({"key": r.key, "value": self._value(r.value, typed),
                                 "offset": r.offset, "timestamp": r.timestamp, "partition": p}
                                for r in resp.rows), p, resp.snapshot_offset)
                if not resp.HasField("next_cursor"):
                    return
                if resp.next_cursor == cursor:
                    raise StrataError(-1, "no progress (the broker repeated its cursor)",
                                      self._ctx(p))
                cursor = resp.next_cursor

    def changelog(self, from_offset: Union[int, Mapping[int, int]] = 0,
                  partitions: Optional[Iterable[int]] = None, follow: bool = True,
                  max_wait_ms: int = 1000, max_records: int = 1000, where: Optional[str] = None,
                  stats: Optional[Dict[str, int]] = None) -> Iterator[Dict[str, Any]]:
        """ReadChangelog (16003): the table's typed changes, per partition in offset order.

        Each change is a dict: partition, offset, timestamp, kind ("insert" | "update" |
        "delete"), key (bytes), before and after (decoded like row values; None when the change
        has none — before is only there in full image mode).

        `from_offset`: the first offset of every partition, or {partition: offset}
        (partitions then defaults to its keys). `partitions`: which ones (None = all).
        follow=False: stops once each partition reached the high watermark it had at its first
        answer. follow=True: never stops; long-polls with `max_wait_ms` (1..30000) so new
        changes arrive as they are written (break out of the loop, or close the generator, to
        stop). An offset below the log start or past the high watermark raises StrataError
        OFFSET_OUT_OF_RANGE.

        `where` (typed tables): only the changes whose row matches, e.g.
        ``"amount >= 100 AND (country = 'DE' OR risk IS NULL)"`` (grammar in predicate.py); the
        broker skips whole batches by their column statistics (table.statistics.columns).
        `stats`, if given, accumulates skipped_batches, skipped_bytes and filtered_changes."""
        pred = parse_where(where) if where is not None else None
        info = self._settings()
        typed = info["value_format"] in _TYPED_FORMATS
        offsets = start_offsets(from_offset, partitions, info["partition_count"])
        wait = max(0, min(int(max_wait_ms), 30000)) if follow else 0

        def request():
            req = _rc.ReadChangelogRequest(topic=self.name, max_wait_ms=wait)
            if pred is not None:
                req.filter.CopyFrom(pred)
            return req

        def changes(pc):
            for c in pc.changes:
                yield {"partition": pc.partition, "offset": c.offset, "timestamp": c.timestamp,
                       "kind": _KINDS.get(c.kind, "unspecified"), "key": c.key,
                       "before": (self._value(c.before, typed)
                                  if c.HasField("before") else None),
                       "after": (self._value(c.after, typed)
                                 if c.HasField("after") else None)}

        yield from follow_reads(
            self._client, self.name, offsets, follow, wait,
            max(1, min(int(max_records), MAX_PAGE_ROWS)), API_READ_CHANGELOG, "ReadChangelog",
            request, _rc.ReadChangelogResponse, changes,
            lambda p: self._retrying(lambda: self._client._leader_addr(self.name, p)), self._ctx,
            stats)

    # ---------------------------------------------------------------- pandas

    def to_dataframe(self, rows: Sequence[Any], keys: Optional[Sequence[bytes]] = None,
                     points: Optional[Sequence[int]] = None):
        """A pandas DataFrame of `rows` (from get_many, as_of, prefix or a scan page): one line
        per row with key, offset, timestamp, partition, and the value's columns on typed tables
        (else a ``value`` column); absent rows (None) and OutOfRetention answers become lines
        with ``found`` False (and ``earliest``) when `keys` says which key they were for.
        Needs pandas (imported only here)."""
        try:
            import pandas  # noqa: F401  (optional dependency)
        except ImportError:
            raise ImportError("Table.to_dataframe needs pandas, which is not installed "
                              "(apt-get install python3-pandas, or pip install pandas)") from None
        records = []
        for i, row in enumerate(rows):
            rec: Dict[str, Any] = {}
            if keys is not None:
                rec["key"] = keys[i]
            if points is not None:
                rec["at"] = points[i]
            if isinstance(row, dict):
                rec.update({k: v for k, v in row.items() if k != "value"})
                rec["found"] = True
                if isinstance(row.get("value"), dict):
                    rec.update(row["value"])
                else:
                    rec["value"] = row.get("value")
            else:
                rec["found"] = False
                if isinstance(row, OutOfRetention):
                    rec["earliest"] = row.earliest
            records.append(rec)
        return pandas.DataFrame.from_records(records)
