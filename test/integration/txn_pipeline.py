"""A consume-transform-produce pipeline with exactly-once semantics, for test_transactions.py:
reads <src> (all partitions, from the group's committed offsets; read_committed), writes
"out-<value>" to the same partition of <dst> and commits the consumed offsets inside the same
transaction (send_offsets_to_transaction). Transactions of 1-20 records, each spending 20 ms
between its output and its commit (a kill often lands there). Exits once <src> has been
idle for 3 s; the test kills it with SIGKILL at random points before that.
Usage: txn_pipeline.py <bootstrap> <src> <dst> <group> <transactional.id> <partitions> <seed>"""
import random
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition, OFFSET_BEGINNING


def main():
    bootstrap, src, dst, group, tid, parts, seed = sys.argv[1:]
    rng = random.Random(int(seed))
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 2})
    p.init_transactions(60)  # fences and aborts the killed instance's open transaction
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False,
                  "isolation.level": "read_committed", "auto.offset.reset": "earliest"})
    tps = c.committed([TopicPartition(src, i) for i in range(int(parts))], timeout=60)
    for tp in tps:
        if tp.offset < 0:
            tp.offset = OFFSET_BEGINNING
    c.assign(tps)
    print("READY", flush=True)
    idle_since = time.time()
    while time.time() - idle_since < 3:
        msgs = [m for m in c.consume(num_messages=rng.randint(1, 20), timeout=0.5)
                if not m.error()]
        if not msgs:
            continue
        idle_since = time.time()
        p.begin_transaction()
        for m in msgs:
            p.produce(dst, key=m.key(), value=b"out-" + m.value(), partition=m.partition())
        p.flush(60)  # the output is in the log: a kill from here on leaves it to be aborted
        time.sleep(0.02)  # "work" inside the transaction, so that kills land there too
        p.send_offsets_to_transaction(c.position(c.assignment()), c.consumer_group_metadata(), 60)
        p.commit_transaction(60)
        print("COMMITTED %d" % len(msgs), flush=True)
    c.close()
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
