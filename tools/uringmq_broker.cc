// uringmq-broker: the RocketMQ-compatible broker (NameServer and broker roles in one process).
//
//   uringmq-broker -c broker.conf
//
// Recovers the store, binds the listeners, tells systemd READY=1 (when started as a
// Type=notify unit), prints "uringmq-broker ready: ..." on stderr and serves until SIGTERM,
// SIGINT or SIGHUP (a closed terminal, or the kernel's hang-up of a paused process whose group
// lost its parent: the Java broker's JVM stops cleanly on it too), then stops cleanly (replies
// in flight written, store flushed and checkpointed, abort file removed) and exits 0. Exit 1:
// the config or the store could not be opened, or the store stopped with an error (a shard
// fail-stopped after a disk error: the abort file stays and the next start recovers); the
// reason is printed. Exit 2: usage.

#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "net/broker.h"
#include "net/common/log.h"
#include "net/ops/broker_config.h"
#include "uringmq/version.h"

// jemalloc's settings (read at its start; MALLOC_CONF in the environment still overrides them).
// Freed pages go back to the OS within about a second, from jemalloc's background thread:
// with the defaults (10 s decay, run only inside allocator calls) the buffers of closed
// connections (up to connectionBuffersMaxBytes) stayed resident while the broker was quiet.
// Measured: 32 connections holding 3 MiB of a frame each, +150 MiB RSS; 1 s after they closed,
// +48 MiB left with the defaults, 0 with these.
extern "C" {
// NOLINTNEXTLINE: the name and type are jemalloc's.
const char* malloc_conf = "background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0";
}

namespace {

uringmq::net::Broker* g_broker = nullptr;

void on_signal(int) {
  if (g_broker != nullptr) g_broker->request_stop();
}

// systemd's readiness protocol: one datagram to $NOTIFY_SOCKET (sd_notify(3)); a no-op when
// not started by systemd.
void notify_systemd(const char* state) {
  const char* path = std::getenv("NOTIFY_SOCKET");
  if (path == nullptr || path[0] == '\0') return;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  size_t len = std::strlen(path);
  if (len >= sizeof(addr.sun_path)) return;
  std::memcpy(addr.sun_path, path, len);
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';  // abstract socket
  int fd = ::socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  (void)::sendto(fd, state, std::strlen(state), MSG_NOSIGNAL, reinterpret_cast<sockaddr*>(&addr),
                 static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + len));
  ::close(fd);
}

int usage() {
  std::fprintf(stderr,
               "usage: uringmq-broker -c <broker.conf> | --version\n"
               "  Serves RocketMQ clients (remoting protocol) on listenPort and answers\n"
               "  NameServer route queries on namesrvListenPort. See tools/broker.conf.\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace uringmq::net;
  std::string config_path;
  for (int i = 1; i < argc; i++) {
    std::string arg = argv[i];
    if ((arg == "-c" || arg == "--config") && i + 1 < argc) {
      config_path = argv[++i];
    } else if (arg == "-h" || arg == "--help") {
      return usage();
    } else if (arg == "--version") {
      std::printf("uringmq-broker %s\n", uringmq::kVersion);
      return 0;
    } else {
      std::fprintf(stderr, "uringmq-broker: unknown argument '%s'\n", arg.c_str());
      return usage();
    }
  }
  if (config_path.empty()) return usage();
  uringmq::io::Result<BrokerConfig> config = load_broker_config(config_path);
  if (!config.is_ok()) {
    std::fprintf(stderr, "uringmq-broker: %s\n", config.status().message().c_str());
    return 1;
  }
  LogLevel level = LogLevel::info;
  (void)parse_log_level(config->log_level, &level);
  set_log_level(level);
  log_info("config " + config_path + ":\n" + describe_broker_config(*config));
  log_info("opening the store in " + config->store.data_dir + " (recovery)");

  uringmq::io::Result<std::unique_ptr<Broker>> broker = Broker::open(*config);
  if (!broker.is_ok()) {
    log_error("cannot start: " + broker.status().to_string());
    return 1;
  }
  g_broker = broker->get();
  struct sigaction action {};
  action.sa_handler = on_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGHUP, &action, nullptr);
  signal(SIGPIPE, SIG_IGN);

  for (const auto& report : (*broker)->store().recovery_reports()) {
    log_info("recovered a shard: log end " + std::to_string(report.end_offset) + ", " +
             std::to_string(report.records_scanned) + " records rescanned, " +
             std::to_string(report.torn_bytes_truncated) + " torn bytes truncated" +
             (report.unclean_stop ? " (unclean stop)" : ""));
  }
  std::string ready = "uringmq-broker ready: broker " + config->bind_address + ":" +
                      std::to_string((*broker)->broker_port());
  if ((*broker)->grpc_port() != 0) {
    ready += ", grpc " + config->bind_address + ":" + std::to_string((*broker)->grpc_port());
  }
  if ((*broker)->namesrv_port() != 0) {
    ready += ", namesrv " + config->bind_address + ":" + std::to_string((*broker)->namesrv_port());
  }
  // Each shard is one RocketMQ broker with its main and VIP port (net/core/presented_broker.h).
  for (size_t i = 0; i < (*broker)->presented().size(); i++) {
    const uringmq::net::PresentedBroker& b = (*broker)->presented()[i];
    ready += (i == 0 ? "; brokers " : ", ") + b.name + " " + config->bind_address + ":" +
             std::to_string(b.port) + " (VIP " + std::to_string((*broker)->vip_ports()[i]) + ")";
  }
  log_always(ready);
  notify_systemd("READY=1");

  uringmq::io::Status served = (*broker)->run();
  notify_systemd("STOPPING=1");
  g_broker = nullptr;
  if (!served.is_ok()) {
    log_error("stopped with an error: " + served.to_string());
    return 1;
  }
  log_always("stopped cleanly");
  return 0;
}
