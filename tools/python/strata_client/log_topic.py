"""Reads of a log topic's records (ReadLog, extension API 16008): committed records from an
offset, optionally filtered on a typed log topic (table.value.format=json) with whole batches
skipped by their column statistics (table.statistics.columns)."""

from __future__ import annotations

import json
import time
from typing import Any, Dict, Iterable, Iterator, Mapping, Optional, Union

from ._ext import read_log_pb2 as _rl
from ._reads import follow_reads, start_offsets
from .errors import StrataError
from .predicate import parse_where

API_READ_LOG = 16008
MAX_PAGE_RECORDS = 10_000


class LogTopic:
    """A handle on log topic `name` (from :meth:`Strata.log`); nothing is sent until a read."""

    def __init__(self, client: Any, name: str) -> None:
        self._client = client
        self.name = name

    def __repr__(self) -> str:
        return "LogTopic(%r)" % self.name

    def _ctx(self, partition: Optional[int] = None) -> str:
        if partition is None:
            return "topic '%s'" % self.name
        return "topic '%s' partition %d" % (self.name, partition)

    def partition_count(self) -> int:
        """The topic's partition count (Metadata)."""
        return self._client._partition_count(self.name)

    def read(self, from_offset: Union[int, Mapping[int, int]] = 0,
             partitions: Optional[Iterable[int]] = None, follow: bool = True,
             max_wait_ms: int = 1000, max_records: int = 1000, where: Optional[str] = None,
             stats: Optional[Dict[str, int]] = None,
             decode: bool = True) -> Iterator[Dict[str, Any]]:
        """ReadLog (16008): the topic's committed records, per partition in offset order.

        Each record is a dict: partition, offset, timestamp, key (bytes or None), value (a dict
        when `decode` and the value is a JSON object, else bytes or None), headers (list of
        (name, bytes or None)). `from_offset`, `partitions`, `follow`, `max_wait_ms` as for
        Table.changelog. `where` (typed log topics): only the records whose value matches (a
        null value always does), e.g. ``"amount >= 100 AND country = 'DE'"``; `stats` (a dict)
        accumulates skipped_batches, skipped_bytes and filtered_records."""
        pred = parse_where(where) if where is not None else None
        offsets = start_offsets(from_offset, partitions, self.partition_count())
        wait = max(0, min(int(max_wait_ms), 30000)) if follow else 0

        def request():
            req = _rl.ReadLogRequest(topic=self.name, max_wait_ms=wait)
            if pred is not None:
                req.filter.CopyFrom(pred)
            return req

        def value_of(r):
            if not r.HasField("value"):
                return None
            if decode:
                try:
                    v = json.loads(r.value)
                    if isinstance(v, dict):
                        return v
                except ValueError:
                    pass
            return r.value

        def records(pr):
            for r in pr.records:
                yield {"partition": pr.partition, "offset": r.offset, "timestamp": r.timestamp,
                       "key": r.key if r.HasField("key") else None, "value": value_of(r),
                       "headers": [(h.key, h.value if h.HasField("value") else None)
                                   for h in r.headers]}

        def leader(p: int):
            for attempt in range(3):  # a moved leader: refresh the metadata and look again
                try:
                    return self._client._leader_addr(self.name, p)
                except StrataError as e:
                    if attempt == 2 or e.code not in (5, 6, 13):
                        raise
                    self._client._invalidate(self.name)
                    time.sleep(0.05 * (attempt + 1))

        yield from follow_reads(
            self._client, self.name, offsets, follow, wait,
            max(1, min(int(max_records), MAX_PAGE_RECORDS)), API_READ_LOG, "ReadLog", request,
            _rl.ReadLogResponse, records, leader, self._ctx, stats)
