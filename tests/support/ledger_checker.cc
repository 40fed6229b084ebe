#include "tests/support/ledger_checker.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>
#include <utility>

namespace uringmq::testing {
namespace {

struct Key {
  uint32_t producer = 0;
  uint64_t seq = 0;
  bool operator==(const Key&) const = default;
};

struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t x = (uint64_t{k.producer} * 0x9E3779B97F4A7C15ULL) ^ k.seq;
    x = (x ^ (x >> 31)) * 0xBF58476D1CE4E5B9ULL;
    return static_cast<size_t>(x ^ (x >> 29));
  }
};

struct Expected {
  bool acked = false;
  uint64_t offset = 0;
  uint32_t copies = 0;  // records found with this key
};

std::string describe(const char* what, uint32_t producer, uint64_t seq, uint64_t offset) {
  char line[160];
  std::snprintf(line, sizeof(line), "%s: producer=%u seq=%llu offset=%llu", what, producer,
                static_cast<unsigned long long>(seq), static_cast<unsigned long long>(offset));
  return line;
}

void note(CheckResult& result, uint64_t& counter, const std::string& problem) {
  counter++;
  if (result.first_problem.empty()) result.first_problem = problem;
}

}  // namespace

std::string CheckResult::to_string() const {
  char line[512];
  std::snprintf(
      line, sizeof(line),
      "attempted=%llu acked=%llu present=%llu unacked_present=%llu "
      "unacked_absent=%llu lost=%llu hole=%llu duplicate=%llu phantom=%llu "
      "reorder=%llu offset_mismatch=%llu",
      static_cast<unsigned long long>(attempted), static_cast<unsigned long long>(acked),
      static_cast<unsigned long long>(present), static_cast<unsigned long long>(unacked_present),
      static_cast<unsigned long long>(unacked_absent), static_cast<unsigned long long>(lost),
      static_cast<unsigned long long>(hole), static_cast<unsigned long long>(duplicate),
      static_cast<unsigned long long>(phantom), static_cast<unsigned long long>(reorder),
      static_cast<unsigned long long>(offset_mismatch));
  std::string out = line;
  if (!first_problem.empty()) out += " first_problem=\"" + first_problem + "\"";
  return out;
}

CheckResult check_ledger(const std::vector<LedgerEntry>& attempted_or_acked,
                         const std::vector<StoredRecord>& records) {
  CheckResult result;
  std::unordered_map<Key, Expected, KeyHash> expected;
  expected.reserve(attempted_or_acked.size());
  for (const LedgerEntry& e : attempted_or_acked) {
    Expected& x = expected[Key{e.producer, e.seq}];
    if (!e.acked) continue;
    if (x.acked && x.offset != e.offset) {
      note(result, result.offset_mismatch,
           describe("acknowledged twice at different offsets", e.producer, e.seq, e.offset));
    }
    x.acked = true;
    x.offset = e.offset;
  }
  result.attempted = expected.size();

  // Walk the log: duplicates, phantoms, offsets, per-producer order.
  std::unordered_map<uint32_t, uint64_t> last_seq;  // per producer, along the log
  uint64_t max_offset = 0;
  bool any = false;
  for (const StoredRecord& r : records) {
    if (any && r.offset <= max_offset) {
      note(result, result.reorder,
           describe("log offsets not increasing", r.producer, r.seq, r.offset));
    }
    if (!any || r.offset > max_offset) max_offset = r.offset;
    any = true;
    auto it = expected.find(Key{r.producer, r.seq});
    if (it == expected.end()) {
      note(result, result.phantom,
           describe("phantom (never attempted)", r.producer, r.seq, r.offset));
      continue;
    }
    Expected& x = it->second;
    if (++x.copies > 1) {
      note(result, result.duplicate, describe("duplicate", r.producer, r.seq, r.offset));
      continue;
    }
    if (x.acked && x.offset != r.offset) {
      note(result, result.offset_mismatch,
           describe("found at another offset than acknowledged", r.producer, r.seq, r.offset));
    }
    auto last = last_seq.find(r.producer);
    if (last != last_seq.end() && r.seq <= last->second) {
      note(result, result.reorder, describe("producer order broken", r.producer, r.seq, r.offset));
    }
    if (last == last_seq.end() || r.seq > last->second) last_seq[r.producer] = r.seq;
  }

  // Every acknowledged record must be present; a missing one below present data is a hole.
  // Reported in log order, so first_problem names the lowest lost offset.
  std::vector<std::pair<uint64_t, Key>> missing;
  for (const auto& [key, x] : expected) {
    if (x.copies > 0) result.present++;
    if (!x.acked) {
      if (x.copies > 0) {
        result.unacked_present++;
      } else {
        result.unacked_absent++;
      }
      continue;
    }
    result.acked++;
    if (x.copies == 0) missing.emplace_back(x.offset, key);
  }
  std::sort(missing.begin(), missing.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second.producer < b.second.producer;
  });
  for (const auto& [offset, key] : missing) {
    note(result, result.lost,
         describe("lost (acknowledged, absent)", key.producer, key.seq, offset));
    auto last = last_seq.find(key.producer);
    bool later_of_producer = last != last_seq.end() && last->second > key.seq;
    bool later_in_log = any && max_offset > offset;
    if (later_of_producer || later_in_log) {
      note(result, result.hole,
           describe("hole (absent below present records)", key.producer, key.seq, offset));
    }
  }
  return result;
}

}  // namespace uringmq::testing
