"""strata_client: a pure-Python client for Strata's primary-key table reads.

    from strata_client import Strata
    with Strata("127.0.0.1:9092") as s:
        print(s.table("users").get("user-1"))

See tools/python/README.md and docs/python-client.md.
"""
from .client import Key, Row, ScanPage, Strata, Table
from .log_topic import LogTopic
from .errors import ConnectionLost, OutOfRetention, StrataError, error_name
from .partitioner import partition_for_key
from .predicate import parse_where

__all__ = ["Strata", "Table", "LogTopic", "ScanPage", "Key", "Row", "StrataError", "ConnectionLost",
           "OutOfRetention", "error_name", "partition_for_key", "parse_where"]
__version__ = "0.1.0"
