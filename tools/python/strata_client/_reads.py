"""The partition-by-partition read loop shared by Table.changelog (ReadChangelog, 16003) and
LogTopic.read (ReadLog, 16008): requests grouped by leader, offsets carried per partition,
follow=False stopping at each partition's first high watermark, metadata refreshed on a moved
leader or a lost connection."""

from __future__ import annotations

import time
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Tuple, Union

from .errors import ConnectionLost, StrataError

Addr = Tuple[str, int]
_STATS = ("skipped_batches", "skipped_bytes", "filtered_changes", "filtered_records")


def start_offsets(from_offset: Union[int, Mapping[int, int]], partitions: Optional[Iterable[int]],
                  partition_count: int) -> Dict[int, int]:
    """{partition: first offset} from a single offset or a mapping (see Table.changelog)."""
    if isinstance(from_offset, Mapping):
        offsets = {int(p): int(o) for p, o in from_offset.items()}
        if partitions is not None:
            offsets = {int(p): offsets.get(int(p), 0) for p in partitions}
        return offsets
    ps = range(partition_count) if partitions is None else partitions
    return {int(p): int(from_offset) for p in ps}


def follow_reads(client: Any, topic: str, offsets: Dict[int, int], follow: bool, wait_ms: int,
                 max_records: int, api: int, api_name: str, make_request: Callable[[], Any],
                 resp_cls: Any,
                 items: Callable[[Any], Iterable[Any]], leader: Callable[[int], Addr],
                 ctx: Callable[[Optional[int]], str],
                 stats: Optional[Dict[str, int]]) -> Iterator[Any]:
    """Yields items(partition answer) for every answer until each partition is done (follow=False)
    or forever. make_request() -> a request with topic, max_wait_ms and filter set; the
    partitions (from_offset, max_records) are added here."""
    targets: Dict[int, int] = {}  # follow=False: the high watermark to stop at
    stalls = 0
    while offsets:
        by_leader: Dict[Addr, List[int]] = {}
        for p in sorted(offsets):
            by_leader.setdefault(leader(p), []).append(p)
        progressed = False
        for addr, parts in by_leader.items():
            req = make_request()
            for p in parts:
                req.partitions.add(partition=p, from_offset=offsets[p],
                                   max_records=max_records)
            try:
                with client._pool.lease(addr) as conn:
                    resp = conn.call_ext(api, req, resp_cls, extra_timeout=wait_ms / 1000.0)
            except ConnectionLost:
                client._invalidate(topic)
                time.sleep(0.1)
                continue  # asked again in the next pass
            if resp.error_code:
                raise StrataError(resp.error_code, resp.error_message, api_name)
            for pc in sorted(resp.partitions, key=lambda pc: pc.partition):
                p = pc.partition
                if p not in offsets:
                    continue
                if pc.error_code:
                    if pc.error_code in (5, 6):
                        client._invalidate(topic)
                        continue
                    raise StrataError(pc.error_code, pc.error_message, ctx(p))
                if stats is not None:
                    for f in _STATS:
                        if hasattr(pc, f):
                            stats[f] = stats.get(f, 0) + getattr(pc, f)
                n = 0
                for item in items(pc):
                    n += 1
                    yield item
                if n or pc.next_offset != offsets[p]:
                    progressed = True
                offsets[p] = max(offsets[p], pc.next_offset)
                if not follow:
                    target = targets.setdefault(p, pc.high_watermark)
                    if offsets[p] >= target:
                        del offsets[p]
        if not follow and offsets and not progressed:
            stalls += 1
            if stalls > 50:
                raise StrataError(-1, "no progress below the high watermark", ctx(None))
            time.sleep(0.02)
        else:
            stalls = 0
