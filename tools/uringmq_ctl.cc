// uringmq-ctl: the operator tool. Offline commands read a stopped broker's store (ctl_offline.h);
// online commands talk to a running broker over the RocketMQ remoting protocol (ctl_online.h).
// Exit codes: 0 ok, 1 failure (including corruption found), 2 usage error.

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "tools/ctl_args.h"
#include "tools/ctl_offline.h"
#include "tools/ctl_online.h"

namespace uringmq::ctl {
namespace {

constexpr const char* kUsage =
    "usage: uringmq-ctl <command> [options]\n"
    "\n"
    "Offline (on a stopped broker's store, or a copy):\n"
    "  verify --dir <storePathRootDir> [--max-message-size B] [--no-progress]\n"
    "      scan every CommitLog record of every shard-<i>/ (CRCs, structure) and check every\n"
    "      ConsumeQueue unit against its record; exit 1 on any corruption\n"
    "  dump-log <segment-file> [--from <byte position>] [--count N]\n"
    "      one line per record: position, log offset, size, topic, queue, queue offset,\n"
    "      store time, properties (\\x01 shown as '=', \\x02 as ';'), body length\n"
    "  dump-cq <consume-queue-file> [--from <queue offset>] [--count N]\n"
    "      one line per unit: queue offset, CommitLog offset, size, tags code\n"
    "\n"
    "Online (to a broker, --addr host:port, default 127.0.0.1:10911):\n"
    "  produce --topic T [--tag X] [--keys K] [--delay-level N] [--queue Q] [--count N]\n"
    "          [--property k=v]... <body>\n"
    "  consume --topic T --group G [--queue Q|all] [--from first|last|committed|<offset>]\n"
    "          [--max N] [--wait-ms W] [--commit]\n"
    "      defaults: --queue all, --from committed (first when never committed), --max 32\n"
    "  stats [--topic T [--queues N]]\n"
    "      broker runtime table (delay levels, store counters); with --topic, per-queue\n"
    "      min/max offsets (queue count from the route unless --queues)\n";

int usage_error(const std::string& what) {
  std::fprintf(stderr, "uringmq-ctl: %s\n\n%s", what.c_str(), kUsage);
  return kExitUsage;
}

int run_verify(const CtlArgs& args) {
  const std::string* dir = args.get("dir");
  if (dir == nullptr) return usage_error("verify needs --dir <storePathRootDir>");
  if (!args.positional().empty()) return usage_error("verify takes no positional argument");
  VerifyOptions options;
  options.dir = *dir;
  if (args.has("max-message-size")) {
    std::optional<int64_t> bytes = parse_int(*args.get("max-message-size"), 1, 1ll << 30);
    if (!bytes) return usage_error("--max-message-size must be a size in bytes");
    options.max_body_bytes = static_cast<uint32_t>(*bytes);
  }
  if (!args.has("no-progress") && ::isatty(STDERR_FILENO)) options.progress = stderr;
  io::Result<VerifyReport> report = verify_store(options);
  if (!report.is_ok()) {
    std::fprintf(stderr, "uringmq-ctl: verify %s: %s\n", dir->c_str(),
                 report.status().to_string().c_str());
    return kExitFailure;
  }
  print_verify_report(*report, stdout);
  return report->ok() ? kExitOk : kExitFailure;
}

// dump-log / dump-cq.
int run_dump(const CtlArgs& args, bool log) {
  if (args.positional().size() != 1) {
    return usage_error(std::string(log ? "dump-log" : "dump-cq") + " needs exactly one file");
  }
  DumpOptions options;
  std::optional<int64_t> from = parse_int(args.get_or("from", "0"), 0, INT64_MAX);
  std::optional<int64_t> count = parse_int(args.get_or("count", "-1"), -1, INT64_MAX);
  if (!from) return usage_error("--from must be a non-negative number");
  if (!count || *count == 0) return usage_error("--count must be a positive number");
  options.from = static_cast<uint64_t>(*from);
  if (*count > 0) options.count = static_cast<uint64_t>(*count);
  const std::string& path = args.positional()[0];
  io::Status status = log ? dump_log(path, options, stdout) : dump_cq(path, options, stdout);
  if (!status.is_ok()) {
    std::fflush(stdout);
    std::fprintf(stderr, "uringmq-ctl: %s\n", status.to_string().c_str());
    return kExitFailure;
  }
  return kExitOk;
}

int run(int argc, char** argv) {
  if (argc < 2) return usage_error("no command");
  std::string command = argv[1];
  if (command == "--help" || command == "-h" || command == "help") {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  struct Spec {
    const char* name;
    std::set<std::string_view> valued;
    std::set<std::string_view> flags;
  };
  const Spec specs[] = {
      {"verify", {"dir", "max-message-size"}, {"no-progress"}},
      {"dump-log", {"from", "count"}, {}},
      {"dump-cq", {"from", "count"}, {}},
      {"produce",
       {"addr", "topic", "tag", "keys", "delay-level", "queue", "count", "property"},
       {}},
      {"consume", {"addr", "topic", "group", "queue", "from", "max", "wait-ms"}, {"commit"}},
      {"stats", {"addr", "topic", "queues"}, {}},
  };
  for (const Spec& spec : specs) {
    if (command != spec.name) continue;
    CtlArgs args(argc, argv, 2, spec.valued, spec.flags);
    if (!args.error().empty()) return usage_error(command + ": " + args.error());
    if (command == "verify") return run_verify(args);
    if (command == "dump-log") return run_dump(args, true);
    if (command == "dump-cq") return run_dump(args, false);
    if (command == "produce") return run_produce(args);
    if (command == "consume") return run_consume(args);
    return run_stats(args);
  }
  return usage_error("unknown command '" + command + "'");
}

}  // namespace
}  // namespace uringmq::ctl

int main(int argc, char** argv) {
  return uringmq::ctl::run(argc, argv);
}
