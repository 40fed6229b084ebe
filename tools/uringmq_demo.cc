// uringmq-demo: the embedded default job of tools/run.sh. Opens (or recovers) a CommitLog under
// --data with the default configuration (1 GiB segments, SYNC_FLUSH), appends messages through
// io_uring with group commit, waits for their durable acknowledgements, reads a sample back by
// physical offset, checks every byte, and closes cleanly. Prints what it did.
#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "engine/log/commit_log.h"
#include "engine/log/message_codec.h"
#include "engine/log/properties.h"
#include "io/clock.h"
#include "io/uring_disk.h"

namespace {

using namespace uringmq;

struct Args {
  std::string data_dir = "./data";
  uint64_t messages = 100000;
  uint32_t body_bytes = 1024;
  engine::FlushMode flush_mode = engine::FlushMode::sync_flush;
  io::IoMode io_mode = io::IoMode::buffered;
};

[[noreturn]] void usage(const char* why) {
  std::fprintf(stderr,
               "uringmq-demo: %s\nusage: uringmq-demo [--data DIR] [--messages N] "
               "[--body-bytes N] [--flush sync|async] [--io-mode buffered|direct]\n",
               why);
  std::exit(2);
}

Args parse_args(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; i++) {
    std::string_view flag = argv[i];
    if (i + 1 >= argc) usage(("missing value after " + std::string(flag)).c_str());
    std::string value = argv[++i];
    if (flag == "--data") {
      args.data_dir = value;
    } else if (flag == "--messages") {
      args.messages = std::strtoull(value.c_str(), nullptr, 10);
    } else if (flag == "--body-bytes") {
      args.body_bytes = static_cast<uint32_t>(std::strtoul(value.c_str(), nullptr, 10));
    } else if (flag == "--flush") {
      if (value != "sync" && value != "async") usage("--flush takes sync or async");
      args.flush_mode =
          value == "sync" ? engine::FlushMode::sync_flush : engine::FlushMode::async_flush;
    } else if (flag == "--io-mode") {
      if (value != "buffered" && value != "direct") usage("--io-mode takes buffered or direct");
      args.io_mode = value == "direct" ? io::IoMode::direct : io::IoMode::buffered;
    } else {
      usage(("unknown option " + std::string(flag)).c_str());
    }
  }
  if (args.messages == 0 || args.body_bytes == 0) usage("--messages and --body-bytes must be > 0");
  return args;
}

void fill_body(std::vector<std::byte>& body, uint64_t seq) {
  for (size_t i = 0; i < body.size(); i++) body[i] = static_cast<std::byte>((seq * 31 + i) & 0xFF);
}

double seconds_since(const io::Clock& clock, int64_t start_ns) {
  return static_cast<double>(clock.monotonic_ns() - start_ns) / 1e9;
}

// Counts the acknowledgements the log has ready into acked and indeterminate.
void count_acks(engine::CommitLog& log, uint64_t& acked, uint64_t& indeterminate) {
  std::array<engine::Ack, 512> acks;
  for (size_t n; (n = log.take_acks(acks)) > 0;) {
    for (size_t i = 0; i < n; i++) {
      (acks[i].outcome == engine::AckOutcome::ok ? acked : indeterminate)++;
    }
  }
}

// Appends args.messages messages and waits for every acknowledgement; offsets and sizes get
// where each one went. False (said on stderr) if an append failed.
bool append_all(engine::CommitLog& log, const io::Clock& clock, const Args& args,
                std::vector<engine::LogOffset>& offsets, std::vector<uint32_t>& sizes,
                uint64_t& acked, uint64_t& indeterminate) {
  std::string properties;
  engine::append_property(properties, engine::kPropertyTags, "demo");
  std::vector<std::byte> body(args.body_bytes);
  engine::MessageInput input;
  input.topic = "DemoTopic";
  input.properties = properties;
  input.born_host = engine::HostAddress::ipv4(127, 0, 0, 1, 0);
  input.store_host = engine::HostAddress::ipv4(127, 0, 0, 1, 10911);
  for (uint64_t seq = 0; seq < args.messages;) {
    fill_body(body, seq);
    input.body = body;
    input.born_timestamp_ms = clock.now_ms();
    io::Result<engine::AppendResult> r = log.append(input, static_cast<int64_t>(seq), seq);
    if (r.is_ok()) {
      offsets[seq] = r->offset;
      sizes[seq] = r->size_bytes;
      seq++;
    } else if (r.status().code() != io::Code::busy) {
      std::fprintf(stderr, "uringmq-demo: append failed: %s\n", r.status().to_string().c_str());
      return false;
    }
    if (!r.is_ok() || seq % 64 == 0) log.poll(r.is_ok() ? io::Wait::none : io::Wait::at_least_one);
    count_acks(log, acked, indeterminate);
  }
  while (acked + indeterminate < args.messages) {
    log.poll(io::Wait::at_least_one);
    count_acks(log, acked, indeterminate);
  }
  return true;
}

// Reads a sample of at most 1000 records back by physical offset and checks every byte; returns
// how many matched.
uint64_t verify_sample(engine::CommitLog& log, const Args& args, uint64_t sample,
                       const std::vector<engine::LogOffset>& offsets,
                       const std::vector<uint32_t>& sizes) {
  std::vector<std::byte> body(args.body_bytes);
  std::vector<std::byte> record;
  uint64_t verified = 0;
  engine::DecodeOptions decode_options;
  for (uint64_t k = 0; k < sample; k++) {
    uint64_t seq = k * (args.messages / sample);
    record.assign(sizes[seq], std::byte{0});
    if (!log.read(offsets[seq], sizes[seq], record.data(), seq).is_ok()) break;
    std::array<engine::ReadCompletion, 1> done;
    while (log.take_reads(done) == 0) log.poll(io::Wait::at_least_one);
    decode_options.expected_physical_offset = static_cast<int64_t>(offsets[seq].value);
    engine::DecodeResult d = engine::decode(record, decode_options);
    fill_body(body, seq);
    if (done[0].result == sizes[seq] && d.outcome == engine::DecodeOutcome::ok &&
        d.view.body.size() == body.size() &&
        std::memcmp(d.view.body.data(), body.data(), body.size()) == 0) {
      verified++;
    }
  }
  return verified;
}

}  // namespace

int main(int argc, char** argv) {
  Args args = parse_args(argc, argv);
  io::SystemClock clock;
  io::Result<std::unique_ptr<io::UringDisk>> disk = io::UringDisk::create(io::UringDiskOptions{});
  if (!disk.is_ok()) {
    std::fprintf(stderr, "uringmq-demo: %s\n", disk.status().to_string().c_str());
    return 1;
  }
  engine::CommitLogOptions options;
  options.dir = args.data_dir;
  options.flush_mode = args.flush_mode;
  options.io_mode = args.io_mode;
  std::printf("opening %s (segments of %llu MiB, %s)\n", options.dir.c_str(),
              static_cast<unsigned long long>(options.segment_size_bytes >> 20),
              args.flush_mode == engine::FlushMode::sync_flush ? "SYNC_FLUSH" : "ASYNC_FLUSH");
  engine::RecoveryReport report;
  auto opened = engine::CommitLog::open(**disk, clock, options, &report);
  if (!opened.is_ok()) {
    std::fprintf(stderr, "uringmq-demo: cannot open the store: %s\n",
                 opened.status().to_string().c_str());
    return 1;
  }
  engine::CommitLog& log = **opened;
  std::printf(
      "recovered: %s stop, log end %llu, %llu records rescanned in %.1f ms, "
      "%llu torn bytes truncated\n",
      report.unclean_stop ? "unclean" : "clean", static_cast<unsigned long long>(report.end_offset),
      static_cast<unsigned long long>(report.records_scanned),
      static_cast<double>(report.duration_ns) / 1e6,
      static_cast<unsigned long long>(report.torn_bytes_truncated));

  std::vector<engine::LogOffset> offsets(args.messages);
  std::vector<uint32_t> sizes(args.messages);
  uint64_t acked = 0, indeterminate = 0;
  const int64_t start_ns = clock.monotonic_ns();
  if (!append_all(log, clock, args, offsets, sizes, acked, indeterminate)) return 1;
  const double elapsed_s = seconds_since(clock, start_ns);
  const engine::CommitLogStats& stats = log.stats();
  std::printf(
      "appended %llu messages of %u bytes in %.3f s: %.0f msgs/s, %.1f MB/s, "
      "%llu acknowledged durable, %llu indeterminate\n",
      static_cast<unsigned long long>(args.messages), args.body_bytes, elapsed_s,
      static_cast<double>(args.messages) / elapsed_s,
      static_cast<double>(args.messages) * args.body_bytes / elapsed_s / 1e6,
      static_cast<unsigned long long>(acked), static_cast<unsigned long long>(indeterminate));
  std::printf(
      "%llu writes, %llu fdatasyncs (%.1f messages per fdatasync), %llu segments "
      "prepared\n",
      static_cast<unsigned long long>(stats.writes_submitted),
      static_cast<unsigned long long>(stats.fdatasyncs_completed),
      stats.fdatasyncs_completed ? static_cast<double>(acked) / stats.fdatasyncs_completed : 0.0,
      static_cast<unsigned long long>(stats.segments_prepared));

  const uint64_t sample = std::min<uint64_t>(args.messages, 1000);
  const uint64_t verified = verify_sample(log, args, sample, offsets, sizes);
  std::printf("read back %llu of %llu sampled records by offset: %llu byte-identical\n",
              static_cast<unsigned long long>(sample), static_cast<unsigned long long>(sample),
              static_cast<unsigned long long>(verified));
  io::Status closed = log.close();
  std::printf("closed: %s; log end %llu bytes\n", closed.to_string().c_str(),
              static_cast<unsigned long long>(log.durable_offset().value));
  return closed.is_ok() && verified == sample ? 0 : 1;
}
