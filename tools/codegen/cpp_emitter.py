"""Emits C++ structs with encode/decode/size for the parsed schemas (see generate.py)."""

CPP_PRIMITIVE = {
    "int8": "int8_t", "int16": "int16_t", "int32": "int32_t", "int64": "int64_t",
    "uint16": "uint16_t", "float64": "double", "bool": "bool", "string": "std::string",
    "bytes": "std::span<const uint8_t>", "uuid": "Uuid", "records": "Records",
}
INTEGER_TYPES = {"int8", "int16", "int32", "int64", "uint16"}


def element_type(f):
    if f.struct is not None:
        return f.struct.name
    if f.is_error_code:
        return "ErrorCode"
    return CPP_PRIMITIVE[f.base]


def cpp_type(f):
    t = element_type(f)
    if f.is_array:
        t = "std::vector<%s>" % t
    if f.nullable is not None and f.base != "records":
        t = "std::optional<%s>" % t
    return t


def int_literal(text, base):
    v = int(text, 0)
    if base == "int32" and v == -2**31:
        return "INT32_MIN"
    if base == "int64" and v == -2**63:
        return "INT64_MIN"
    return text


def default_init(f):
    """C++ initializer expression (without '='), or None for value-initialisation."""
    d = f.default
    if f.is_array:
        if d == "null":
            return "std::nullopt"
        if f.nullable is not None:
            return "std::vector<%s>{}" % element_type(f)
        return None
    if f.is_error_code:
        # Any int16 is a valid ErrorCode value (unknown codes from the wire are kept as they are).
        if d is None or int(d, 0) == 0:
            return "ErrorCode::none"
        return "ErrorCode{%d}" % int(d, 0)
    if f.base in INTEGER_TYPES:
        return int_literal(d, f.base) if d is not None else "0"
    if f.base == "float64":
        return d if d is not None else "0.0"
    if f.base == "bool":
        if d is None:
            return "false"
        if d not in ("true", "false"):
            raise ValueError("%s: bad bool default %r" % (f.where, d))
        return d
    if f.base == "string":
        if d == "null":
            return "std::nullopt"
        if d is None or d in ('""', ""):
            return 'std::string()' if f.nullable is not None else None
        if not (d.startswith('"') and d.endswith('"')):
            raise ValueError("%s: string default must be quoted: %r" % (f.where, d))
        return d if f.nullable is None else "std::string(%s)" % d
    if f.base == "bytes":
        if d == "null":
            return "std::nullopt"
        return "std::span<const uint8_t>()" if f.nullable is not None else None
    if d is not None:
        raise ValueError("%s: default not supported for %s" % (f.where, f.base))
    return None


def version_cond(r, api_range):
    """C++ condition that `version` is in range r (given the api's supported range)."""
    parts = []
    if r.lo > api_range.lo:
        parts.append("version >= %d" % r.lo)
    if r.hi < api_range.hi:
        parts.append("version <= %d" % r.hi)
    return " && ".join(parts) if parts else "true"


def nullable_cond(f, api_range):
    if f.nullable is None:
        return "false"
    return version_cond(f.nullable, api_range)


def wrap_if(cond, stmt, indent):
    pad = " " * indent
    if cond == "true":
        return ["%s%s" % (pad, stmt)]
    return ["%sif (%s) %s" % (pad, cond, stmt)]


def qualified(message, struct):
    if struct is message.root:
        return message.name
    return "%s::%s" % (message.name, struct.name)


def flexible_expr(api):
    if api.flexible_min is None:
        return "false"
    if api.flexible_min <= api.versions.lo:
        return "true"
    return "version >= %d" % api.flexible_min


class StructEmitter:
    def __init__(self, message):
        self.m = message
        self.api = message.api
        self.vr = message.api.versions

    # ---- declarations ---------------------------------------------------------------------------
    def declare(self, struct, indent, top):
        pad = " " * indent
        out = ["%sstruct %s {" % (pad, struct.name)]
        if top:
            a = self.api
            out.append("%s  static constexpr int16_t kApiKey = %d;" % (pad, a.key))
            out.append("%s  static constexpr int16_t kMinVersion = %d;" % (pad, a.versions.lo))
            out.append("%s  static constexpr int16_t kMaxVersion = %d;" % (pad, a.versions.hi))
            out.append("%s  static constexpr int16_t kFlexibleMin = %d;  // %s" % (
                pad, a.flexible_min if a.flexible_min is not None else 0x7FFF,
                "first flexible version" if a.flexible_min is not None else "never flexible"))
            out.append("")
            for s in self.m.structs:
                out += self.declare(s, indent + 2, False)
                out.append("")
        for f in struct.fields:
            init = default_init(f)
            note = []
            if f.versions.lo != self.vr.lo or f.versions.hi != self.vr.hi:
                note.append("v%d%s" % (f.versions.lo, "+" if f.versions.hi >= self.vr.hi
                                       else "-%d" % f.versions.hi))
            if f.nullable is not None:
                note.append("nullable v%d+" % f.nullable.lo)
            if f.tag is not None:
                note.append("tag %d" % f.tag)
            comment = "  // " + ", ".join(note) if note else ""
            out.append("%s  %s %s%s;%s" % (pad, cpp_type(f), f.name,
                                           (" = " + init) if init else "{}", comment))
        out.append("")
        out.append("%s  void encode(Writer& w, int16_t version) const;" % pad)
        out.append("%s  void decode(Reader& r, int16_t version);" % pad)
        out.append("%s  size_t size(int16_t version) const;" % pad)
        out.append("%s  bool operator==(const %s& other) const;" % (pad, struct.name))
        out.append("%s};" % pad)
        return out

    # ---- definitions ----------------------------------------------------------------------------
    def define(self, struct):
        q = qualified(self.m, struct)
        regular = [f for f in struct.fields if f.tag is None]
        tagged = sorted((f for f in struct.fields if f.tag is not None), key=lambda f: f.tag)
        flex = flexible_expr(self.api)
        out = []

        # encode
        out.append("void %s::encode([[maybe_unused]] Writer& w, "
                   "[[maybe_unused]] int16_t version) const {" % q)
        out.append("  [[maybe_unused]] const bool flexible = %s;" % flex)
        for f in regular:
            out += wrap_if(version_cond(f.versions, self.vr),
                           "gen::put(w, %s, flexible, %s, version);"
                           % (f.name, nullable_cond(f, self.vr)), 2)
        if self.api.flexible_min is not None:
            out.append("  if (flexible) {")
            if not tagged:
                out.append("    w.write_empty_tagged_fields();")
            else:
                out.append("    uint32_t tagged_count = 0;")
                for f in tagged:
                    out.append("    const bool write_%s = %s;" % (f.name, self.tag_present(f)))
                    out.append("    if (write_%s) ++tagged_count;" % f.name)
                out.append("    w.write_uvarint(tagged_count);")
                for f in tagged:
                    nc = nullable_cond(f, self.vr)
                    out.append("    if (write_%s) {" % f.name)
                    out.append("      w.write_uvarint(%d);" % f.tag)
                    out.append("      w.write_uvarint(static_cast<uint32_t>("
                               "gen::size(%s, true, %s, version)));" % (f.name, nc))
                    out.append("      gen::put(w, %s, true, %s, version);" % (f.name, nc))
                    out.append("    }")
            out.append("  }")
        out.append("}")
        out.append("")

        # decode
        out.append("void %s::decode([[maybe_unused]] Reader& r, "
                   "[[maybe_unused]] int16_t version) {" % q)
        out.append("  *this = %s{};" % struct.name)
        out.append("  [[maybe_unused]] const bool flexible = %s;" % flex)
        for f in regular:
            out += wrap_if(version_cond(f.versions, self.vr),
                           "gen::get(r, %s, flexible, %s, version);"
                           % (f.name, nullable_cond(f, self.vr)), 2)
        if self.api.flexible_min is not None:
            out.append("  if (flexible) {")
            if not tagged:
                out.append("    r.skip_tagged_fields();")
            else:
                out.append("    r.read_tagged_fields([&](uint32_t tag, uint32_t) {")
                out.append("      switch (tag) {")
                for f in tagged:
                    out.append("        case %d:" % f.tag)
                    cond = version_cond(f.versions, self.vr)
                    out.append("          if (!(%s)) return false;" % cond)
                    out.append("          gen::get(r, %s, true, %s, version);"
                               % (f.name, nullable_cond(f, self.vr)))
                    out.append("          return true;")
                out.append("        default:")
                out.append("          return false;")
                out.append("      }")
                out.append("    });")
            out.append("  }")
        out.append("}")
        out.append("")

        # size
        out.append("size_t %s::size([[maybe_unused]] int16_t version) const {" % q)
        out.append("  [[maybe_unused]] const bool flexible = %s;" % flex)
        out.append("  size_t n = 0;")
        for f in regular:
            out += wrap_if(version_cond(f.versions, self.vr),
                           "n += gen::size(%s, flexible, %s, version);"
                           % (f.name, nullable_cond(f, self.vr)), 2)
        if self.api.flexible_min is not None:
            out.append("  if (flexible) {")
            if not tagged:
                out.append("    n += 1;")
            else:
                out.append("    uint32_t tagged_count = 0;")
                for f in tagged:
                    out.append("    if (%s) {" % self.tag_present(f))
                    out.append("      size_t field_size = gen::size(%s, true, %s, version);"
                               % (f.name, nullable_cond(f, self.vr)))
                    out.append("      n += wire_size::uvarint(%d) + wire_size::uvarint("
                               "static_cast<uint32_t>(field_size)) + field_size;" % f.tag)
                    out.append("      ++tagged_count;")
                    out.append("    }")
                out.append("    n += wire_size::uvarint(tagged_count);")
            out.append("  }")
        out.append("  return n;")
        out.append("}")
        out.append("")

        # equality
        out.append("bool %s::operator==([[maybe_unused]] const %s& other) const {"
                   % (q, struct.name))
        for f in struct.fields:
            out.append("  if (!gen::equals(%s, other.%s)) return false;" % (f.name, f.name))
        out.append("  return true;")
        out.append("}")
        out.append("")
        return out

    def tag_present(self, f):
        cond = version_cond(f.versions, self.vr)
        init = default_init(f)
        dflt = "decltype(%s)(%s)" % (f.name, init) if init else "decltype(%s){}" % f.name
        not_default = "!gen::equals(%s, %s)" % (f.name, dflt)
        return not_default if cond == "true" else "(%s) && %s" % (cond, not_default)


def emit_header(api):
    out = [
        "// Generated by tools/codegen/generate.py from protocol/schemas/%s.schema: do not edit."
        % api.snake,
        "// Kafka %s (api key %d), versions %d-%d%s: request and response structs with"
        % (api.name, api.key, api.versions.lo, api.versions.hi,
           ", flexible from v%d" % api.flexible_min if api.flexible_min is not None else ""),
        "// encode/decode/size for every supported version. Value types; thread-compatible.",
        "#pragma once",
        "",
        "#include <cstddef>",
        "#include <cstdint>",
        "#include <optional>",
        "#include <span>",
        "#include <string>",
        "#include <vector>",
        "",
        "#include \"protocol/wire/errors.h\"",
        "#include \"protocol/wire/reader.h\"",
        "#include \"protocol/wire/records.h\"",
        "#include \"protocol/wire/uuid.h\"",
        "#include \"protocol/wire/writer.h\"",
        "",
        "namespace strata::protocol {",
        "",
    ]
    for m in (api.request, api.response):
        out += StructEmitter(m).declare(m.root, 0, True)
        out.append("")
    out.append("}  // namespace strata::protocol")
    out.append("")
    return "\n".join(out)


def emit_source(api):
    out = [
        "// Generated by tools/codegen/generate.py from protocol/schemas/%s.schema: do not edit."
        % api.snake,
        "#include \"protocol/messages/%s.h\"" % api.snake,
        "",
        "#include <climits>",
        "",
        "#include \"protocol/wire/field_codec.h\"",
        "",
        "namespace strata::protocol {",
        "",
    ]
    for m in (api.request, api.response):
        e = StructEmitter(m)
        for s in m.structs:
            out += e.define(s)
        out += e.define(m.root)
    out.append("}  // namespace strata::protocol")
    out.append("")
    return "\n".join(out)


def emit_messages_header(apis):
    out = [
        "// Generated by tools/codegen/generate.py: includes every generated Kafka message.",
        "// Header only; any thread.",
        "#pragma once",
        "",
    ]
    for a in sorted(apis, key=lambda a: a.snake):
        out.append("#include \"protocol/messages/%s.h\"" % a.snake)
    out.append("")
    return "\n".join(out)


def emit_api_table(apis):
    h = [
        "// Generated by tools/codegen/generate.py: the table of every api Strata has a schema for",
        "// (key, name, supported versions, first flexible version). Constant data; any thread.",
        "#pragma once",
        "",
        "#include <cstdint>",
        "#include <span>",
        "",
        "namespace strata::protocol {",
        "",
        "struct ApiInfo {",
        "  int16_t key;",
        "  const char* name;",
        "  int16_t min_version, max_version;",
        "  int16_t flexible_min;  // 0x7fff when the api has no flexible version",
        "};",
        "",
        "// nullptr when no schema exists for the key.",
        "const ApiInfo* find_api(int16_t key);",
        "// Every schema'd api, sorted by key.",
        "std::span<const ApiInfo> all_apis();",
        "",
        "}  // namespace strata::protocol",
        "",
    ]
    c = [
        "// Generated by tools/codegen/generate.py: do not edit.",
        "#include \"protocol/messages/api_table.h\"",
        "",
        "namespace strata::protocol {",
        "namespace {",
        "",
        "constexpr ApiInfo kApis[] = {",
    ]
    for a in sorted(apis, key=lambda a: a.key):
        c.append("    {%d, \"%s\", %d, %d, %d}," % (
            a.key, a.name, a.versions.lo, a.versions.hi,
            a.flexible_min if a.flexible_min is not None else 0x7FFF))
    c += [
        "};",
        "",
        "}  // namespace",
        "",
        "const ApiInfo* find_api(int16_t key) {",
        "  for (const auto& a : kApis) {",
        "    if (a.key == key) return &a;",
        "  }",
        "  return nullptr;",
        "}",
        "",
        "std::span<const ApiInfo> all_apis() { return kApis; }",
        "",
        "}  // namespace strata::protocol",
        "",
    ]
    return "\n".join(h), "\n".join(c)
