"""Errors raised by strata_client: Kafka error codes with their names."""
from __future__ import annotations

from typing import Optional

from ._errors_table import ERROR_NAMES

__all__ = ["StrataError", "ConnectionLost", "OutOfRetention", "error_name", "ERROR_NAMES"]


def error_name(code: int) -> str:
    """The Kafka name of an error code (``3`` -> ``"UNKNOWN_TOPIC_OR_PARTITION"``)."""
    return ERROR_NAMES.get(code, "UNKNOWN_ERROR_%d" % code)


class StrataError(Exception):
    """An error answered by the broker (a Kafka error code), or a broken connection/protocol.

    Attributes:
        code: the Kafka error code (``-1`` UNKNOWN_SERVER_ERROR for client-side failures such as a
            response that does not match its request).
        name: the code's Kafka name, e.g. ``"UNKNOWN_TOPIC_OR_PARTITION"``.
        message: the broker's ``error_message`` (may be empty).
        context: what was being read (``"table 'users' partition 2"``).
    """

    def __init__(self, code: int, message: str = "", context: str = "") -> None:
        self.code = int(code)
        self.name = error_name(self.code)
        self.message = message or ""
        self.context = context or ""
        text = self.name
        if self.context:
            text += ": " + self.context
        if self.message:
            text += ": " + self.message
        super().__init__(text)

    @property
    def retriable(self) -> bool:
        """True for the codes Kafka marks retriable that a read may simply retry."""
        return self.code in (5, 6, 7, 13, 14, 15, 16, 19, 70, 74, 75, 78)


class ConnectionLost(StrataError):
    """The connection to a broker failed or closed mid-request (code -1, NETWORK_EXCEPTION-like)."""

    def __init__(self, message: str, context: str = "") -> None:
        super().__init__(13, message, context)  # NETWORK_EXCEPTION


class OutOfRetention:
    """The answer of :meth:`Table.as_of` for a point the table's history no longer covers.

    The broker answers per (key, point) OFFSET_OUT_OF_RANGE (1) with ``earliest``, the earliest
    point of the same kind (an offset, or a timestamp in ms) that it still covers. It is never the
    current row or a guess. Falsy, so ``if row:`` treats it like an absent row; test with
    ``isinstance(row, OutOfRetention)``.
    """

    __slots__ = ("key", "at", "earliest", "partition")
    code = 1
    name = "OFFSET_OUT_OF_RANGE"

    def __init__(self, key: bytes, at: int, earliest: int, partition: int) -> None:
        self.key = key
        self.at = at
        self.earliest = earliest
        self.partition = partition

    def __bool__(self) -> bool:
        return False

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OutOfRetention) and (
            self.key, self.at, self.earliest, self.partition) == (
            other.key, other.at, other.earliest, other.partition)

    def __hash__(self) -> int:
        return hash((self.key, self.at, self.earliest, self.partition))

    def __repr__(self) -> str:
        return "OutOfRetention(key=%r, at=%d, earliest=%d, partition=%d)" % (
            self.key, self.at, self.earliest, self.partition)

    def raise_(self, context: Optional[str] = None) -> None:
        """Raises this answer as a StrataError(OFFSET_OUT_OF_RANGE)."""
        raise StrataError(1, "point %d is before the history's earliest %d" % (
            self.at, self.earliest), context or "key %r" % (self.key,))
