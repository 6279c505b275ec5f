"""Filters for changelog reads: a small SQL-like WHERE text parsed into the wire Predicate.

Grammar (keywords in any case; OR binds looser than AND; parentheses group)::

    expr       := term ("OR" term)*
    term       := factor ("AND" factor)*
    factor     := "(" expr ")" | column op literal | column "IS" "NULL"
    op         := "=" | "<" | "<=" | ">" | ">="
    literal    := integer | decimal | 'string' ('' inside is a quote) | TRUE | FALSE
    column     := name ([A-Za-z_][A-Za-z0-9_.]*) | "quoted name" ("" inside is a quote)

Semantics are the broker's (docs/typed-tables.md, "Filtered reads"): a null or absent column,
or a value of another type than the literal, does not match a comparison. The same grammar is
the CLI's ``--where`` (tools/cli/where.cc).
"""

from __future__ import annotations

import math
import re
from typing import List, Tuple

from ._ext import predicate_pb2 as _pr

_OPS = {"=": _pr.Predicate.EQ, "<": _pr.Predicate.LT, "<=": _pr.Predicate.LE,
        ">": _pr.Predicate.GT, ">=": _pr.Predicate.GE}

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<num>-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)
    | (?P<str>'(?:[^']|'')*')
    | (?P<qname>"(?:[^"]|"")*")
    | (?P<name>[A-Za-z_][A-Za-z0-9_.]*)
    | (?P<op><=|>=|=|<|>)
    | (?P<paren>[()])
    )""", re.VERBOSE)


def _tokens(text: str) -> List[Tuple[str, str]]:
    out: List[Tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m or m.end() == pos:
            raise ValueError(f"where: cannot read {text[pos:pos + 20]!r}")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.i = 0
        self.depth = 0

    def peek_word(self) -> str:
        if self.i < len(self.toks) and self.toks[self.i][0] == "name":
            return self.toks[self.i][1].upper()
        return ""

    def take(self) -> Tuple[str, str]:
        if self.i >= len(self.toks):
            raise ValueError("where: unexpected end")
        t = self.toks[self.i]
        self.i += 1
        return t

    def expr(self) -> _pr.Predicate:
        parts = [self.term()]
        while self.peek_word() == "OR":
            self.i += 1
            parts.append(self.term())
        return parts[0] if len(parts) == 1 else _pr.Predicate(op=_pr.Predicate.OR, operands=parts)

    def term(self) -> _pr.Predicate:
        parts = [self.factor()]
        while self.peek_word() == "AND":
            self.i += 1
            parts.append(self.factor())
        return parts[0] if len(parts) == 1 else _pr.Predicate(op=_pr.Predicate.AND, operands=parts)

    def factor(self) -> _pr.Predicate:
        kind, text = self.take()
        if kind == "paren" and text == "(":
            self.depth += 1
            if self.depth > 64:  # far above what the broker accepts (16)
                raise ValueError("where: nested too deep")
            inner = self.expr()
            self.depth -= 1
            if self.take() != ("paren", ")"):
                raise ValueError("where: ')' expected")
            return inner
        if kind == "qname":
            column = text[1:-1].replace('""', '"')
        elif kind == "name" and text.upper() not in ("AND", "OR", "IS", "NULL", "TRUE", "FALSE"):
            column = text
        else:
            raise ValueError(f"where: a column expected, not {text!r}")
        if self.peek_word() == "IS":
            self.i += 1
            if self.take()[1].upper() != "NULL":
                raise ValueError("where: IS NULL expected")
            return _pr.Predicate(op=_pr.Predicate.IS_NULL, column=column)
        kind, op = self.take()
        if kind != "op":
            raise ValueError(f"where: an operator expected after {column}, not {op!r}")
        return _pr.Predicate(op=_OPS[op], column=column, value=self.literal())

    def literal(self) -> _pr.Literal:
        kind, text = self.take()
        if kind == "num":
            if re.fullmatch(r"-?\d+", text):
                if not -(1 << 63) <= int(text) < (1 << 63):
                    raise ValueError(f"where: integer out of range: {text}")
                return _pr.Literal(int_value=int(text))
            value = float(text)
            if math.isinf(value):
                raise ValueError(f"where: number out of range: {text}")
            return _pr.Literal(double_value=value)
        if kind == "str":
            return _pr.Literal(string_value=text[1:-1].replace("''", "'"))
        if kind == "name" and text.upper() in ("TRUE", "FALSE"):
            return _pr.Literal(bool_value=text.upper() == "TRUE")
        raise ValueError(f"where: a literal expected, not {text!r}")


def parse_where(text: str) -> _pr.Predicate:
    """The Predicate of a WHERE text (ValueError naming what is wrong)."""
    p = _Parser(text)
    out = p.expr()
    if p.i != len(p.toks):
        raise ValueError(f"where: unexpected {p.toks[p.i][1]!r}")
    return out
