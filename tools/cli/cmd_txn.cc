// `strata txn ...`: list and describe the coordinator's transactional ids, the active producers of
// a topic's partitions, and abort a hanging transaction (one open on a partition that no producer
// or coordinator will end, holding read_committed consumers at its first offset) as Kafka's
// kafka-transactions.sh does: DescribeProducers finds the producer whose open transaction starts
// at the given offset, WriteTxnMarkers writes an ABORT marker with its epoch.
#include <algorithm>
#include <iostream>

#include "tools/cli/cli_common.h"

namespace strata::cli {
namespace {

struct TxnOpts {
  std::string txn_id;
  std::string topic;
  std::optional<int32_t> partition;
  std::vector<std::string> states;
  std::vector<int64_t> producer_ids;
  int64_t min_duration_ms = -1;
  std::optional<int64_t> start_offset;
  std::optional<int64_t> producer_id;
  std::optional<int16_t> producer_epoch;
  int32_t coordinator_epoch = 0;
};

std::string opt_num(int64_t v) { return v < 0 ? "-" : std::to_string(v); }
json jnum(int64_t v) { return v < 0 ? json(nullptr) : json(v); }

int do_list(Cli& cli, const TxnOpts& o) {
  auto ts = cli.client().list_transactions(o.states, o.producer_ids, o.min_duration_ms);
  if (!ts.ok()) return fail(cli, ts.status());
  if (cli.json_out()) {
    json arr = json::array();
    for (const auto& t : *ts) {
      arr.push_back({{"transactional_id", t.transactional_id},
                     {"producer_id", t.producer_id},
                     {"state", t.state}});
    }
    print_json({{"transactions", arr}});
    return kExitOk;
  }
  TextTable tt({"TRANSACTIONAL-ID", "PRODUCER-ID", "STATE"});
  for (const auto& t : *ts) tt.add({t.transactional_id, std::to_string(t.producer_id), t.state});
  tt.print();
  return kExitOk;
}

int do_describe(Cli& cli, const TxnOpts& o) {
  auto d = cli.client().describe_transaction(o.txn_id);
  if (!d.ok()) return fail(cli, d.status());
  if (cli.json_out()) {
    json parts = json::array();
    for (const auto& tp : d->partitions) {
      parts.push_back({{"topic", tp.topic}, {"partitions", tp.partitions}});
    }
    print_json({{"transactional_id", d->transactional_id},
                {"state", d->state},
                {"producer_id", d->producer_id},
                {"producer_epoch", d->producer_epoch},
                {"timeout_ms", d->timeout_ms},
                {"start_time_ms", jnum(d->start_time_ms)},
                {"topic_partitions", parts}});
    return kExitOk;
  }
  std::string parts;
  for (const auto& tp : d->partitions) {
    for (int32_t p : tp.partitions) {
      parts += (parts.empty() ? "" : ",") + tp.topic + "-" + std::to_string(p);
    }
  }
  TextTable tt({"TRANSACTIONAL-ID", "STATE", "PRODUCER-ID", "EPOCH", "TIMEOUT-MS", "START-TIME-MS",
                "PARTITIONS"});
  tt.add({d->transactional_id, d->state, std::to_string(d->producer_id),
          std::to_string(d->producer_epoch), std::to_string(d->timeout_ms),
          opt_num(d->start_time_ms), parts.empty() ? "-" : parts});
  tt.print();
  return kExitOk;
}

int do_producers(Cli& cli, const TxnOpts& o) {
  std::vector<int32_t> parts;
  if (o.partition) parts.push_back(*o.partition);
  auto ps = cli.client().describe_producers(o.topic, parts);
  if (!ps.ok()) return fail(cli, ps.status());
  if (cli.json_out()) {
    json arr = json::array();
    for (const auto& pp : *ps) {
      for (const auto& p : pp.producers) {
        arr.push_back({{"partition", pp.partition},
                       {"producer_id", p.producer_id},
                       {"producer_epoch", p.producer_epoch},
                       {"last_sequence", p.last_sequence},
                       {"last_timestamp", jnum(p.last_timestamp)},
                       {"coordinator_epoch", p.coordinator_epoch},
                       {"current_txn_start_offset", jnum(p.current_txn_start_offset)}});
      }
    }
    print_json({{"topic", o.topic}, {"producers", arr}});
    return kExitOk;
  }
  TextTable tt({"PARTITION", "PRODUCER-ID", "EPOCH", "LAST-SEQUENCE", "LAST-TIMESTAMP",
                "COORDINATOR-EPOCH", "TXN-START-OFFSET"});
  for (const auto& pp : *ps) {
    for (const auto& p : pp.producers) {
      tt.add({std::to_string(pp.partition), std::to_string(p.producer_id),
              std::to_string(p.producer_epoch), std::to_string(p.last_sequence),
              opt_num(p.last_timestamp), std::to_string(p.coordinator_epoch),
              opt_num(p.current_txn_start_offset)});
    }
  }
  tt.print();
  return kExitOk;
}

int do_abort(Cli& cli, const TxnOpts& o) {
  if (o.start_offset.has_value() == o.producer_id.has_value()) {
    return usage_error(cli, "give either --start-offset or --producer-id with --producer-epoch");
  }
  if (o.producer_id && !o.producer_epoch) {
    return usage_error(cli, "--producer-id needs --producer-epoch");
  }
  auto& c = cli.client();
  int64_t pid = o.producer_id.value_or(-1);
  int16_t epoch = o.producer_epoch.value_or(-1);
  int32_t coordinator_epoch = o.coordinator_epoch;
  if (o.start_offset) {
    auto ps = c.describe_producers(o.topic, {*o.partition});
    if (!ps.ok()) return fail(cli, ps.status());
    const client::ActiveProducer* found = nullptr;
    for (const auto& p : ps->front().producers) {
      if (p.current_txn_start_offset == *o.start_offset) found = &p;
    }
    if (!found) {
      return fail(cli, Status(Errc::not_found, "no open transaction starts at offset " +
                                                   std::to_string(*o.start_offset) + " of " +
                                                   o.topic + "-" + std::to_string(*o.partition)));
    }
    pid = found->producer_id;
    epoch = static_cast<int16_t>(found->producer_epoch);
    // As Kafka's tool: the producer's last coordinator epoch when the broker tracks it.
    coordinator_epoch = std::max(found->coordinator_epoch, 0);
  }
  auto st = c.write_txn_marker(o.topic, *o.partition, pid, epoch, coordinator_epoch, false);
  if (!st.ok()) return fail(cli, st);
  if (cli.json_out()) {
    print_json({{"topic", o.topic},
                {"partition", *o.partition},
                {"producer_id", pid},
                {"producer_epoch", epoch},
                {"aborted", true}});
  } else {
    std::cout << "aborted the transaction of producer " << pid << " (epoch " << epoch << ") on "
              << o.topic << "-" << *o.partition << "\n";
  }
  return kExitOk;
}

}  // namespace

void register_txn(CLI::App& app, Cli& cli) {
  auto* txn = app.add_subcommand("txn", "Transactions: list, describe, producers, abort");
  txn->require_subcommand(1);
  {
    auto o = std::make_shared<TxnOpts>();
    auto* s = txn->add_subcommand("list", "Transactional ids known to the coordinator");
    s->add_option("--state", o->states,
                  "Only these states (Empty, Ongoing, PrepareCommit, PrepareAbort, "
                  "CompleteCommit, CompleteAbort)");
    s->add_option("--producer-id", o->producer_ids, "Only these producer ids");
    s->add_option("--min-duration-ms", o->min_duration_ms,
                  "Only transactions open longer than this");
    on_run(s, cli, o, do_list);
  }
  {
    auto o = std::make_shared<TxnOpts>();
    auto* s = txn->add_subcommand("describe", "State, producer, timeout and partitions of one id");
    s->add_option("transactional_id", o->txn_id)->required();
    on_run(s, cli, o, do_describe);
  }
  {
    auto o = std::make_shared<TxnOpts>();
    auto* s = txn->add_subcommand("producers", "Active producers of a topic's partitions");
    s->add_option("topic", o->topic)->required();
    s->add_option("--partition,-p", o->partition);
    on_run(s, cli, o, do_producers);
  }
  {
    auto o = std::make_shared<TxnOpts>();
    auto* s = txn->add_subcommand("abort", "Abort a hanging transaction on one partition");
    s->add_option("--topic,-t", o->topic)->required();
    s->add_option("--partition,-p", o->partition)->required();
    s->add_option("--start-offset", o->start_offset,
                  "First offset of the open transaction (DescribeProducers finds its producer)");
    s->add_option("--producer-id", o->producer_id);
    s->add_option("--producer-epoch", o->producer_epoch);
    s->add_option("--coordinator-epoch", o->coordinator_epoch)->capture_default_str();
    on_run(s, cli, o, do_abort);
  }
}

}  // namespace strata::cli
