// Parser for strata-bench's command line (see bench_options.h).
#include "tools/bench/bench_options.h"

#include <charconv>
#include <cstring>
#include <string_view>

namespace strata::tools::bench {
namespace {

Result<int64_t> parse_int(std::string_view flag, std::string_view text) {
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || v < 0) {
    return Status(Errc::invalid_argument,
                  std::string(flag) + ": not a non-negative integer: " + std::string(text));
  }
  return v;
}

}  // namespace

const char* usage() {
  return "usage: strata-bench produce|consume|create [options]\n"
         "  --bootstrap HOST:PORT   broker address (default 127.0.0.1:9092)\n"
         "  --topic NAME            topic (default strata-bench)\n"
         "  --num N                 messages to produce / consume (default 1000000)\n"
         "  --size BYTES            payload size for produce (default 100)\n"
         "  --partitions P          create: partition count; else 0 = from metadata\n"
         "  --acks A                producer acks (default 1)\n"
         "  --linger-ms MS          producer linger.ms (default 5)\n"
         "  --batch-bytes B         producer batch.size (default 1000000)\n"
         "  --batch-messages M      producer batch.num.messages (default 100000)\n"
         "  --compression C         producer compression.codec (default none)\n"
         "  --rotate-bytes B        produce: bytes per partition before moving to the next\n"
         "                          (default = batch-bytes; 0 = librdkafka partitioner)\n"
         "  --timeout-ms MS         fail when no progress for MS (default 120000)\n"
         "  -X key=value            any librdkafka property (repeatable)\n"
         "Prints one JSON line: {\"mode\",\"msgs\",\"bytes\",\"seconds\",\"msgs_per_s\","
         "\"mb_per_s\"} (MB = 2^20 bytes of payload).\n";
}

Result<Options> parse_options(int argc, char** argv) {
  Options o;
  if (argc < 2) return Status(Errc::invalid_argument, "missing mode");
  std::string_view mode = argv[1];
  if (mode == "produce") {
    o.mode = Mode::produce;
  } else if (mode == "consume") {
    o.mode = Mode::consume;
  } else if (mode == "create") {
    o.mode = Mode::create;
  } else {
    return Status(Errc::invalid_argument, "unknown mode: " + std::string(mode));
  }
  for (int i = 2; i < argc; ++i) {
    std::string_view flag = argv[i];
    if (i + 1 >= argc) return Status(Errc::invalid_argument, std::string(flag) + ": missing value");
    std::string_view val = argv[++i];
    auto number = [&](auto& out) -> Status {
      auto r = parse_int(flag, val);
      if (!r.ok()) return r.status();
      out = static_cast<std::remove_reference_t<decltype(out)>>(*r);
      return Status::Ok();
    };
    Status st;
    if (flag == "--bootstrap") {
      o.bootstrap = val;
    } else if (flag == "--topic") {
      o.topic = val;
    } else if (flag == "--num") {
      st = number(o.num_messages);
    } else if (flag == "--size") {
      st = number(o.message_bytes);
    } else if (flag == "--partitions") {
      st = number(o.partitions);
    } else if (flag == "--acks") {
      o.acks = val;
    } else if (flag == "--linger-ms") {
      st = number(o.linger_ms);
    } else if (flag == "--batch-bytes") {
      st = number(o.batch_bytes);
    } else if (flag == "--batch-messages") {
      st = number(o.batch_messages);
    } else if (flag == "--compression") {
      o.compression = val;
    } else if (flag == "--rotate-bytes") {
      st = number(o.rotate_bytes);
    } else if (flag == "--timeout-ms") {
      st = number(o.timeout_ms);
    } else if (flag == "-X") {
      auto eq = val.find('=');
      if (eq == std::string_view::npos || eq == 0) {
        return Status(Errc::invalid_argument, "-X expects key=value: " + std::string(val));
      }
      o.extra.emplace_back(std::string(val.substr(0, eq)), std::string(val.substr(eq + 1)));
    } else {
      return Status(Errc::invalid_argument, "unknown option: " + std::string(flag));
    }
    if (!st.ok()) return st;
  }
  if (o.rotate_bytes < 0) o.rotate_bytes = o.batch_bytes;
  if (o.mode == Mode::create && o.partitions <= 0) {
    return Status(Errc::invalid_argument, "--partitions must be > 0 for create");
  }
  return o;
}

}  // namespace strata::tools::bench
