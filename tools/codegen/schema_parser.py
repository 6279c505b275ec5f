"""Parser for Strata's protocol schema files (format: docs/protocol-schemas.md).

Produces Api objects holding a request and a response Message, each a tree of Struct/Field.
"""

import re

PRIMITIVES = {
    "int8", "int16", "int32", "int64", "uint16", "float64", "bool",
    "string", "bytes", "uuid", "records",
}
VERSION_MAX = 0x7FFF
RESERVED_MEMBERS = {"encode", "decode", "size", "kApiKey", "kMinVersion", "kMaxVersion",
                    "kFlexibleMin"}
CPP_KEYWORDS = {"class", "default", "delete", "new", "operator", "private", "protected",
                "public", "register", "template", "this", "throw", "try", "typename",
                "union", "virtual", "namespace", "int", "bool", "char", "auto", "switch"}


class SchemaError(Exception):
    pass


class VersionRange:
    def __init__(self, lo, hi):
        self.lo, self.hi = lo, hi

    def contains(self, v):
        return self.lo <= v <= self.hi

    def intersect(self, other):
        return VersionRange(max(self.lo, other.lo), min(self.hi, other.hi))

    def empty(self):
        return self.lo > self.hi

    def __repr__(self):
        return "%d-%d" % (self.lo, self.hi)


def parse_range(text, where):
    m = re.fullmatch(r"v?(\d+)(\+|-(\d+))?", text)
    if not m:
        raise SchemaError("%s: bad version range %r" % (where, text))
    lo = int(m.group(1))
    if m.group(2) == "+":
        return VersionRange(lo, VERSION_MAX)
    if m.group(3) is not None:
        return VersionRange(lo, int(m.group(3)))
    return VersionRange(lo, lo)


class Field:
    def __init__(self, name, type_text, where):
        self.name = name
        self.where = where
        self.is_array = type_text.startswith("[]")
        base = type_text[2:] if self.is_array else type_text
        self.base = base
        self.struct = None  # Struct, when base is a struct name
        if base not in PRIMITIVES and not re.fullmatch(r"[A-Z][A-Za-z0-9]*", base):
            raise SchemaError("%s: unknown type %r" % (where, type_text))
        self.versions = None
        self.nullable = None  # VersionRange or None
        self.tag = None
        self.default = None  # raw text or None

    @property
    def is_struct(self):
        return self.base not in PRIMITIVES

    @property
    def is_error_code(self):
        """int16 fields named error_code or *_error_code are typed protocol::ErrorCode."""
        return (self.base == "int16" and not self.is_array
                and (self.name == "error_code" or self.name.endswith("_error_code")))


class Struct:
    def __init__(self, name, where):
        self.name = name
        self.where = where
        self.fields = []


class Message:
    def __init__(self, api, kind):
        self.api = api
        self.kind = kind  # "request" or "response"
        self.name = api.name + ("Request" if kind == "request" else "Response")
        self.root = Struct(self.name, api.path)
        self.structs = []  # nested structs, children before parents


class Api:
    def __init__(self, path):
        self.path = path
        self.key = None
        self.name = None
        self.versions = None
        self.flexible_min = None  # None = never flexible
        self.request = None
        self.response = None

    @property
    def snake(self):
        return re.sub(r"(?<!^)(?=[A-Z])", "_", self.name).lower()


def _tokens(line):
    return re.findall(r'"[^"]*"|\S+', line)


def parse_file(path):
    api = Api(path)
    with open(path, encoding="utf-8") as f:
        raw_lines = f.read().split("\n")
    lines = []  # (lineno, indent, tokens)
    for i, raw in enumerate(raw_lines, 1):
        text = raw.split("#", 1)[0].rstrip() if '"' not in raw else _strip_comment(raw)
        if not text.strip():
            continue
        indent = len(text) - len(text.lstrip(" "))
        if "\t" in text[:indent + 1]:
            raise SchemaError("%s:%d: tabs are not allowed" % (path, i))
        lines.append((i, indent, _tokens(text)))

    stack = []  # (indent, Struct)
    message = None
    for lineno, indent, toks in lines:
        where = "%s:%d" % (path, lineno)
        if indent == 0:
            stack = []
            head = toks[0]
            if head == "api":
                api.key, api.name = int(toks[1]), toks[2]
            elif head == "versions":
                api.versions = parse_range(toks[1], where)
            elif head == "flexible":
                api.flexible_min = None if toks[1] == "none" else parse_range(toks[1], where).lo
            elif head in ("request", "response"):
                if api.name is None or api.versions is None:
                    raise SchemaError("%s: api/versions must come before %s" % (where, head))
                message = Message(api, head)
                setattr(api, head, message)
                stack = [(0, message.root)]
            else:
                raise SchemaError("%s: unknown directive %r" % (where, head))
            continue
        if message is None:
            raise SchemaError("%s: field outside request/response" % where)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if not stack:
            raise SchemaError("%s: bad indentation" % where)
        parent = stack[-1][1]
        field = _parse_field(toks, where, api)
        parent.fields.append(field)
        if field.is_struct:
            field.struct = Struct(field.base, where)
            stack.append((indent, field.struct))
    for m in (api.request, api.response):
        if m is None:
            raise SchemaError("%s: request and response are both required" % path)
        _finish(m)
    return api


def _strip_comment(raw):
    out, in_str = [], False
    for ch in raw:
        if ch == '"':
            in_str = not in_str
        if ch == "#" and not in_str:
            break
        out.append(ch)
    return "".join(out).rstrip()


def _parse_field(toks, where, api):
    if len(toks) < 2:
        raise SchemaError("%s: expected '<name> <type> ...'" % where)
    name, type_text = toks[0], toks[1]
    if not re.fullmatch(r"[a-z][a-z0-9_]*", name):
        raise SchemaError("%s: field name %r must be snake_case" % (where, name))
    if name in RESERVED_MEMBERS or name in CPP_KEYWORDS:
        raise SchemaError("%s: field name %r is reserved" % (where, name))
    f = Field(name, type_text, where)
    f.versions = VersionRange(api.versions.lo, api.versions.hi)
    nullable_all = False
    for t in toks[2:]:
        if re.fullmatch(r"v\d+(\+|-\d+)?", t):
            f.versions = parse_range(t, where).intersect(api.versions)
        elif t == "nullable":
            nullable_all = True
        elif t.startswith("nullable="):
            f.nullable = parse_range(t[len("nullable="):], where)
        elif t.startswith("tag="):
            f.tag = int(t[4:])
        elif t.startswith("default="):
            f.default = t[len("default="):]
        else:
            raise SchemaError("%s: unknown attribute %r" % (where, t))
    if f.versions.empty():
        raise SchemaError("%s: field %s has no version in the api's range" % (where, name))
    if nullable_all:
        f.nullable = VersionRange(f.versions.lo, f.versions.hi)
    if f.nullable is not None:
        f.nullable = f.nullable.intersect(f.versions)
        if f.nullable.empty():
            f.nullable = None
        elif not (f.base in ("string", "bytes", "records") or f.is_array):
            raise SchemaError("%s: only strings, bytes, records and arrays can be nullable" % where)
    if f.tag is not None:
        if api.flexible_min is None or f.versions.lo < api.flexible_min:
            raise SchemaError("%s: tagged field %s must be in flexible versions only" % (where, name))
    if f.default == "null" and f.nullable is None and f.base != "records":
        raise SchemaError("%s: default=null on a field that is never nullable" % where)
    return f


def _finish(message):
    names = {}

    def walk(struct):
        seen, tags = set(), set()
        for f in struct.fields:
            if f.name in seen:
                raise SchemaError("%s: duplicate field %s" % (f.where, f.name))
            seen.add(f.name)
            if f.tag is not None:
                if f.tag in tags:
                    raise SchemaError("%s: duplicate tag %d" % (f.where, f.tag))
                tags.add(f.tag)
            if f.struct is not None:
                if f.struct.name in names or f.struct.name == message.name:
                    raise SchemaError("%s: struct name %s is used twice in %s"
                                      % (f.where, f.struct.name, message.name))
                names[f.struct.name] = f.struct
                if not f.struct.fields:
                    raise SchemaError("%s: struct %s has no fields" % (f.where, f.struct.name))
                walk(f.struct)
                message.structs.append(f.struct)

    walk(message.root)
