// uringmq-ctl: the operator tool. Subcommands and per-command help from CLI11 (`uringmq-ctl
// <command> [<subcommand>] --help`). Offline commands read a stopped broker's store
// (ctl_offline.h); online commands talk to a running broker -- uringmq or a RocketMQ broker --
// over the remoting protocol with the requests mqadmin sends (ctl_commands.h).
// Exit codes: 0 ok, 1 failure (including corruption found), 2 usage error.

#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>

#include "tools/ctl_client.h"
#include "tools/ctl_commands.h"
#include "tools/ctl_offline.h"
#include "tools/ctl_quarantine.h"
#include "tools/ctl_rejoin.h"
#include "uringmq/version.h"

namespace uringmq::ctl {
namespace {

// Every option struct the command line fills; the chosen subcommand's callback runs its command.
struct Commands {
  VerifyOptions verify;
  std::string dump_file;
  uint64_t dump_from = 0;
  uint64_t dump_count = 0;  // 0: all
  bool verify_no_progress = false;
  uint32_t verify_max_message_bytes = 0;
  std::string quarantine_dir;
  uint64_t quarantine_offset = 0;
  ProduceOptions produce;
  ConsumeOptions consume;
  StatsOptions stats;
  TopicOptions topic;
  GroupOptions group;
  MessageOptions message;
  BrokerOptions broker;
  HaOptions ha;
  RejoinOptions rejoin;
  int rc = kExitOk;
};

int run_verify(Commands& c) {
  if (c.verify_max_message_bytes != 0) c.verify.max_body_bytes = c.verify_max_message_bytes;
  if (!c.verify_no_progress && ::isatty(STDERR_FILENO)) c.verify.progress = stderr;
  io::Result<VerifyReport> report = verify_store(c.verify);
  if (!report.is_ok()) {
    std::fprintf(stderr, "uringmq-ctl: verify %s: %s\n", c.verify.dir.c_str(),
                 report.status().to_string().c_str());
    return kExitFailure;
  }
  print_verify_report(*report, stdout);
  return report->ok() ? kExitOk : kExitFailure;
}

enum class DumpKind { log, cq };

int run_dump(const Commands& c, DumpKind kind) {
  DumpOptions options;
  options.from = c.dump_from;
  if (c.dump_count > 0) options.count = c.dump_count;
  io::Status status = kind == DumpKind::log ? dump_log(c.dump_file, options, stdout)
                                            : dump_cq(c.dump_file, options, stdout);
  if (!status.is_ok()) {
    std::fflush(stdout);
    std::fprintf(stderr, "uringmq-ctl: %s\n", status.to_string().c_str());
    return kExitFailure;
  }
  return kExitOk;
}

void add_verify(CLI::App& app, Commands& c) {
  CLI::App* v = app.add_subcommand(
      "verify",
      "Offline: scan every CommitLog record of every shard-<i>/ (CRCs, structure) and check every "
      "ConsumeQueue unit against its record; exit 1 on any corruption");
  v->add_option("--dir", c.verify.dir, "storePathRootDir of a stopped broker (or a copy)")
      ->required();
  v->add_option("--max-message-size", c.verify_max_message_bytes,
                "largest body the log was written with, bytes")
      ->check(CLI::Range(1u, 1u << 30));
  v->add_flag("--no-progress", c.verify_no_progress, "no progress bar on a terminal");
  v->add_flag("--replica", c.verify.foreign_records,
              "the store of a SLAVE: records a RocketMQ master wrote (without uringmq's record "
              "CRC) are accepted (implied where the store holds the foreign_records marker)");
  v->callback([&c] { c.rc = run_verify(c); });
}

// dump-log / dump-cq (and their spellings `dump log` / `dump cq`) under `parent`.
void add_dump(CLI::App* parent, Commands& c, const std::string& name, DumpKind kind) {
  const bool log = kind == DumpKind::log;
  CLI::App* d = parent->add_subcommand(
      name, log ? "Offline: one line per record of a CommitLog segment (position, log offset, "
                  "size, topic, queue, queue offset, store time, properties, body length)"
                : "Offline: one line per unit of a ConsumeQueue file (queue offset, CommitLog "
                  "offset, size, tags code)");
  d->add_option("file", c.dump_file, log ? "segment file" : "consume queue file")->required();
  d->add_option("--from", c.dump_from,
                log ? "byte position in the file (a record boundary)" : "queue offset");
  d->add_option("--count", c.dump_count, "at most this many lines")->check(CLI::PositiveNumber);
  d->callback([&c, kind] { c.rc = run_dump(c, kind); });
}

int finish_quarantine(const io::Status& status) {
  if (status.is_ok()) return kExitOk;
  std::fflush(stdout);
  std::fprintf(stderr, "uringmq-ctl: quarantine: %s\n", status.to_string().c_str());
  return kExitFailure;
}

void add_quarantine(CLI::App& app, Commands& c) {
  CLI::App* q = app.add_subcommand(
      "quarantine", "The damaged CommitLog records the store kept aside (corruptRecordPolicy)");
  q->require_subcommand(1);
  CLI::App* list = q->add_subcommand("list", "One line per quarantined record of every shard");
  list->add_option("--dir", c.quarantine_dir, "storePathRootDir (the broker may be running)")
      ->required();
  list->callback([&c] { c.rc = finish_quarantine(list_quarantine(c.quarantine_dir, stdout)); });
  CLI::App* show = q->add_subcommand("show", "One quarantined record's position and bytes (hex)");
  show->add_option("--dir", c.quarantine_dir, "storePathRootDir (the broker may be running)")
      ->required();
  show->add_option("--offset", c.quarantine_offset, "its store offset (as `list` prints it)")
      ->required();
  show->callback([&c] {
    c.rc = finish_quarantine(show_quarantined(c.quarantine_dir, c.quarantine_offset, stdout));
  });
}

void add_target(CLI::App* cmd, Target& t) {
  cmd->add_option("--addr", t.addr, "broker address host:port")->capture_default_str();
  cmd->add_option("-n,--namesrv", t.namesrv,
                  "NameServer address for route and topic-list requests (default: --addr; a "
                  "uringmq broker is its own NameServer)");
}

void add_data_commands(CLI::App& app, Commands& c) {
  ProduceOptions& p = c.produce;
  CLI::App* produce = app.add_subcommand("produce", "Online: send a message (SEND_MESSAGE_V2)");
  add_target(produce, p.target);
  produce->add_option("--topic", p.topic)->required();
  produce->add_option("--tag", p.tag);
  produce->add_option("--keys", p.keys);
  produce->add_option("--delay-level", p.delay_level)->check(CLI::Range(0, 255));
  produce->add_option("--queue", p.queue, "queue id")->check(CLI::Range(0, 65535));
  produce->add_option("--count", p.count, "send it N times")->check(CLI::Range(1, 100'000'000));
  produce->add_option("--property", p.properties, "name=value (repeatable)")
      ->allow_extra_args(false);
  produce->add_option("body", p.body)->required();
  produce->callback([&c] { c.rc = run_produce(c.produce); });

  ConsumeOptions& k = c.consume;
  CLI::App* consume = app.add_subcommand("consume", "Online: pull and print messages");
  add_target(consume, k.target);
  consume->add_option("--topic", k.topic)->required();
  consume->add_option("--group", k.group)->required();
  consume->add_option("--queue", k.queue, "a queue id or all")->capture_default_str();
  consume
      ->add_option("--from", k.from,
                   "first, last, committed (first when never committed) "
                   "or an offset")
      ->capture_default_str();
  consume->add_option("--max", k.max, "at most N messages")->check(CLI::PositiveNumber);
  consume->add_option("--wait-ms", k.wait_ms, "long-poll each queue this long")
      ->check(CLI::Range(0, 3'600'000));
  consume->add_flag("--commit", k.commit, "commit the offset reached in each queue");
  consume->callback([&c] { c.rc = run_consume(c.consume); });

  CLI::App* stats = app.add_subcommand(
      "stats",
      "Online: the broker's runtime table (store, delay level, timer and transaction "
      "figures); with --topic, per-queue min/max offsets");
  add_target(stats, c.stats.target);
  CLI::Option* stats_topic = stats->add_option("--topic", c.stats.topic);
  stats->add_option("--queues", c.stats.queues, "queue count (default: from the route)")
      ->check(CLI::Range(1, 65536))
      ->needs(stats_topic);
  stats->callback([&c] { c.rc = run_stats(c.stats); });
}

void add_topic(CLI::App& app, Commands& c) {
  TopicOptions& t = c.topic;
  CLI::App* topic = app.add_subcommand("topic", "Online: topics");
  topic->require_subcommand(1);
  auto sub = [&](const char* name, const char* what, int (*run)(const TopicOptions&)) {
    CLI::App* s = topic->add_subcommand(name, what);
    add_target(s, t.target);
    if (std::string(name) != "list") s->add_option("--topic,-t", t.topic)->required();
    s->callback([&c, run] { c.rc = run(c.topic); });
    return s;
  };
  sub("list", "every topic (GET_ALL_TOPIC_LIST_FROM_NAMESERVER)", run_topic_list);
  CLI::App* create =
      sub("create", "create or change a topic (UPDATE_AND_CREATE_TOPIC)", run_topic_create);
  create->add_option("--read-queues,-r", t.read_queues)->check(CLI::Range(1, 1024));
  create->add_option("--write-queues,-w", t.write_queues)->check(CLI::Range(1, 1024));
  create->add_option("--perm,-p", t.perm, "2 write, 4 read, 6 both")
      ->check(CLI::IsMember({2, 4, 6}));
  create->add_flag("--order,-o", t.order, "ordered topic");
  create
      ->add_option("--attribute,-a", t.attributes,
                   "RocketMQ 5 attribute change, repeatable: +message.type=NORMAL|FIFO|DELAY|"
                   "TRANSACTION|MIXED sets it, --attribute=-message.type removes it (only + at "
                   "creation)")
      ->allow_extra_args(false);
  sub("delete", "delete a topic (DELETE_TOPIC_IN_BROKER, DELETE_TOPIC_IN_NAMESRV)",
      run_topic_delete);
  sub("route", "the topic's brokers and queues (GET_ROUTEINFO_BY_TOPIC)", run_topic_route);
  sub("status", "per-queue min/max offsets (GET_TOPIC_STATS_INFO)", run_topic_status);
}

void add_group(CLI::App& app, Commands& c) {
  GroupOptions& g = c.group;
  CLI::App* group = app.add_subcommand("group", "Online: consumer groups");
  group->require_subcommand(1);
  CLI::App* list =
      group->add_subcommand("list", "subscription groups (GET_ALL_SUBSCRIPTIONGROUP_CONFIG)");
  add_target(list, g.target);
  list->callback([&c] { c.rc = run_group_list(c.group); });
  CLI::App* create =
      group->add_subcommand("create",
                            "create or change a subscription group, as mqadmin updateSubGroup "
                            "(UPDATE_AND_CREATE_SUBSCRIPTIONGROUP)");
  add_target(create, g.target);
  create->add_option("--group,-g", g.group)->required();
  create->add_flag("--orderly", g.orderly,
                   "consumeMessageOrderly: a FIFO group (RocketMQ 5 POP consumption)");
  create->add_flag("!--no-consume", g.consume_enable,
                   "consumeEnable=false: the group may not pull");
  create->add_flag("!--no-broadcast", g.broadcast, "consumeBroadcastEnable=false");
  create->add_option("--retry-queues", g.retry_queues, "retryQueueNums")
      ->check(CLI::Range(0, 1024));
  create
      ->add_option("--retry-max-times", g.retry_max_times,
                   "retryMaxTimes: send-backs before the dead-letter topic")
      ->check(CLI::Range(0, 10000));
  create->callback([&c] { c.rc = run_group_create(c.group); });
  CLI::App* lag = group->add_subcommand(
      "lag", "per-queue broker offset, committed offset and their difference (GET_CONSUME_STATS)");
  add_target(lag, g.target);
  lag->add_option("--group,-g", g.group)->required();
  lag->add_option("--topic,-t", g.topic, "only this topic");
  lag->callback([&c] { c.rc = run_group_lag(c.group); });
  CLI::App* reset = group->add_subcommand(
      "reset",
      "move a group's committed offsets: to a time (INVOKE_BROKER_TO_RESET_OFFSET, "
      "which tells the online consumers) or to an offset (UPDATE_CONSUMER_OFFSET)");
  add_target(reset, g.target);
  reset->add_option("--group,-g", g.group)->required();
  reset->add_option("--topic,-t", g.topic)->required();
  CLI::Option* time = reset->add_option(
      "--time", g.time, "ms since the epoch, now, or UTC YYYY-MM-DDTHH:MM:SS[.mmm]");
  CLI::Option* offset =
      reset->add_option("--offset", g.offset, "a queue offset")->check(CLI::NonNegativeNumber);
  time->excludes(offset);
  reset->add_option("--queue", g.queue, "with --offset: only this queue")
      ->check(CLI::Range(0, 65535))
      ->needs(offset);
  reset->add_flag("!--no-force", g.force, "with --time: only move offsets back")->needs(time);
  reset->callback([&c] { c.rc = run_group_reset(c.group); });
}

void add_message(CLI::App& app, Commands& c) {
  MessageOptions& m = c.message;
  CLI::App* message = app.add_subcommand("message", "Online: find messages");
  message->require_subcommand(1);
  CLI::App* id = message->add_subcommand(
      "id",
      "by msgId: an offset msgId (VIEW_MESSAGE_BY_ID) or a client's UNIQ_KEY "
      "(QUERY_MESSAGE, needs --topic)");
  CLI::App* key = message->add_subcommand("key", "by key, from the message index (QUERY_MESSAGE)");
  for (CLI::App* s : {id, key}) {
    add_target(s, m.target);
    s->add_option("--max", m.max, "at most N messages")->check(CLI::Range(1, 64));
    s->add_option("--begin", m.begin, "stored at or after (ms, now or UTC date)");
    s->add_option("--end", m.end, "stored at or before (ms, now or UTC date)");
  }
  id->add_option("--topic,-t", m.topic);
  id->add_option("id", m.id)->required();
  id->callback([&c] { c.rc = run_message_id(c.message); });
  key->add_option("--topic,-t", m.topic)->required();
  key->add_option("key", m.key)->required();
  key->callback([&c] { c.rc = run_message_key(c.message); });
}

void add_broker(CLI::App& app, Commands& c) {
  BrokerOptions& b = c.broker;
  CLI::App* broker = app.add_subcommand("broker", "Online: the broker");
  broker->require_subcommand(1);
  CLI::App* status = broker->add_subcommand("status", "runtime table (GET_BROKER_RUNTIME_INFO)");
  add_target(status, b.target);
  status->callback([&c] { c.rc = run_broker_status(c.broker); });
  CLI::App* config = broker->add_subcommand("config", "the broker's configuration");
  config->require_subcommand(1);
  CLI::App* get = config->add_subcommand("get", "every key=value (GET_BROKER_CONFIG)");
  add_target(get, b.target);
  get->callback([&c] { c.rc = run_broker_config_get(c.broker); });
  CLI::App* set =
      config->add_subcommand("set", "change keys at run time, persisted (UPDATE_BROKER_CONFIG)");
  add_target(set, b.target);
  set->add_option("settings", b.settings, "key=value ...")->required();
  set->callback([&c] { c.rc = run_broker_config_set(c.broker); });
}

void add_ha(CLI::App& app, Commands& c) {
  HaOptions& h = c.ha;
  CLI::App* ha = app.add_subcommand("ha", "Online: the steps of a manual failover");
  ha->require_subcommand(1);
  CLI::App* fence = ha->add_subcommand(
      "fence", "routes the group read-only on every NameServer (WIPE_WRITE_PERM_OF_BROKER)");
  fence->add_option("-n,--namesrv", h.namesrvs, "every NameServer, ip:port;ip:port")->required();
  fence->add_option("-b,--broker-name", h.broker_name, "the brokerName to fence")->required();
  fence->callback([&c] { c.rc = run_ha_fence(c.ha); });
  CLI::App* lag = ha->add_subcommand(
      "lag", "the slave's log end against its master's (exit 1 while it is behind)");
  lag->add_option("--master", h.master, "master address host:port")->required();
  lag->add_option("--slave", h.slave, "slave address host:port")->required();
  lag->callback([&c] { c.rc = run_ha_lag(c.ha); });
  RejoinOptions& r = c.rejoin;
  CLI::App* rejoin = ha->add_subcommand(
      "rejoin",
      "Offline: before a former master starts as a slave, check its CommitLog is a prefix of the "
      "new master's (over the HA port) and cut its tail past the master's end (exit 1 when they "
      "differ: start the slave empty)");
  rejoin->add_option("--dir", r.dir, "storePathRootDir of the stopped former master")->required();
  rejoin
      ->add_option("--master", r.masters,
                   "the new master's HA address (host:haPort), one per shard, ';'-separated")
      ->required();
  rejoin->add_flag("--dry-run", r.dry_run, "compare and report; cut nothing");
  rejoin->add_option("--timeout-ms", r.timeout_ms, "for the master's stream (default 30000)")
      ->check(CLI::Range(int64_t{1000}, int64_t{600'000}));
  rejoin
      ->add_option("--max-message-size", r.max_body_bytes,
                   "largest body the log was written with, bytes")
      ->check(CLI::Range(1u, 1u << 30));
  rejoin->callback([&c] { c.rc = run_ha_rejoin(c.rejoin); });
}

int run(int argc, char** argv) {
  CLI::App app{"uringmq-ctl: the uringmq operator tool (uringmq " URINGMQ_VERSION ")",
               "uringmq-ctl"};
  app.set_version_flag("--version", std::string("uringmq-ctl ") + kVersion);
  app.require_subcommand(1);
  app.fallthrough();
  Commands c;
  add_verify(app, c);
  add_quarantine(app, c);
  add_dump(&app, c, "dump-log", DumpKind::log);
  add_dump(&app, c, "dump-cq", DumpKind::cq);
  CLI::App* dump = app.add_subcommand("dump", "Offline: dump a CommitLog segment or a queue file");
  dump->require_subcommand(1);
  add_dump(dump, c, "log", DumpKind::log);
  add_dump(dump, c, "cq", DumpKind::cq);
  add_data_commands(app, c);
  add_topic(app, c);
  add_group(app, c);
  add_message(app, c);
  add_broker(app, c);
  add_ha(app, c);
  net::TlsClientOptions& tls = ctl_tls_options();
  app.add_flag("--tls", tls.enabled,
               "connect with TLS (a broker whose tls.server.mode is permissive or enforcing)");
  app.add_option("--tls-trust-cert", tls.trust_cert_path,
                 "verify the broker's certificate against these PEM CA certificates (default: "
                 "any certificate, as RocketMQ's client)");
  app.add_option("--tls-cert", tls.cert_path,
                 "a client certificate (PEM), for tls.server.need.client.auth");
  app.add_option("--tls-key", tls.key_path, "the client certificate's private key (PEM)");
  if (argc == 2 && std::string(argv[1]) == "help") {
    std::fputs(app.help().c_str(), stdout);
    return kExitOk;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, the version or the error
    return code == 0 ? kExitOk : kExitUsage;
  }
  return c.rc;
}

}  // namespace
}  // namespace uringmq::ctl

int main(int argc, char** argv) {
  return uringmq::ctl::run(argc, argv);
}
