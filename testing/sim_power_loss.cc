// SimPowerLoss: see testing/sim_power_loss.h.
#include "testing/sim_power_loss.h"

#include <algorithm>
#include <cstring>
#include <set>
#include <string>
#include <utility>

namespace uringmq::io {

void SimPowerLoss::crash_file(SimFileTable::Inode& inode) {
  std::vector<std::byte> image = inode.durable_data;
  for (const SimFileTable::FileRecord& record : inode.pending) {
    if (!record.is_resize) {
      crash_write(image, record);
    } else if (random_.chance(options_.crash_resize_keep_probability)) {
      image.resize(record.size_bytes);
      stats_.resizes_kept++;
    } else {
      stats_.resizes_dropped++;
    }
  }
  inode.pending.clear();
  inode.durable_data = image;
  inode.volatile_data = std::move(image);
}

// Applies one unsynced write to the post-crash image, page by page: keep, drop or tear.
void SimPowerLoss::crash_write(std::vector<std::byte>& image,
                               const SimFileTable::FileRecord& record) {
  const uint64_t begin = record.offset;
  const uint64_t end = begin + record.bytes.size();
  for (uint64_t page = begin - begin % kPageBytes; page < end; page += kPageBytes) {
    const uint64_t lo = std::max(begin, page);
    const uint64_t hi = std::min(end, page + kPageBytes);
    const double keep = options_.crash_page_keep_probability;
    const double drop = options_.crash_page_drop_probability;
    const double draw = random_.unit();
    if (draw < keep) {
      if (hi > image.size()) image.resize(hi);
      std::memcpy(image.data() + lo, record.bytes.data() + (lo - begin), hi - lo);
      stats_.pages_kept++;
    } else if (draw < keep + drop) {
      stats_.pages_dropped++;
    } else {
      tear_page(image, record, lo, hi);
      stats_.pages_torn++;
    }
  }
}

// Tears the part [lo, hi) of one page that `record` wrote: the file grows to cover it (size
// before data), then each 512-byte sector of it is new, old, or bad (zeros or garbage), with at
// least one sector not new. Bytes outside [lo, hi) are never touched.
void SimPowerLoss::tear_page(std::vector<std::byte>& image, const SimFileTable::FileRecord& record,
                             uint64_t lo, uint64_t hi) {
  if (hi > image.size()) image.resize(hi);
  std::vector<std::pair<uint64_t, uint64_t>> sectors;
  for (uint64_t s = lo - lo % kSectorBytes; s < hi; s += kSectorBytes) {
    sectors.emplace_back(std::max(lo, s), std::min(hi, s + kSectorBytes));
  }
  std::vector<uint64_t> fate(sectors.size());  // 0-1 new, 2 old, 3 bad
  bool all_new = true;
  const uint64_t fates = options_.crash_atomic_sectors ? 3 : 4;  // atomic: never a bad sector
  for (uint64_t& f : fate) {
    f = random_.uniform(fates);
    all_new = all_new && f < 2;
  }
  if (all_new) fate[random_.uniform(fate.size())] = 2 + random_.uniform(fates - 2);
  for (size_t i = 0; i < sectors.size(); ++i) {
    const auto [s_lo, s_hi] = sectors[i];
    std::byte* dst = image.data() + s_lo;
    if (fate[i] < 2) {
      std::memcpy(dst, record.bytes.data() + (s_lo - record.offset), s_hi - s_lo);
    } else if (fate[i] == 2) {
      stats_.torn_sectors_old++;
    } else if (random_.chance(options_.crash_torn_sector_garbage_probability)) {
      for (uint64_t b = 0; b < s_hi - s_lo; ++b) dst[b] = static_cast<std::byte>(random_.next());
      stats_.torn_sectors_garbage++;
    } else {
      std::memset(dst, 0, s_hi - s_lo);
      stats_.torn_sectors_zeroed++;
    }
  }
}

void SimPowerLoss::crash_dir(SimFileTable::Inode& inode) {
  std::set<std::string> names;
  for (const auto& entry : inode.entries) names.insert(entry.first);
  for (const auto& entry : inode.durable_entries) names.insert(entry.first);
  for (const std::string& name : names) {
    auto now = inode.entries.find(name);
    auto durable = inode.durable_entries.find(name);
    const uint64_t a = now == inode.entries.end() ? SimFileTable::kNoInode : now->second;
    const uint64_t b =
        durable == inode.durable_entries.end() ? SimFileTable::kNoInode : durable->second;
    if (a != b) stats_.entries_undone++;
  }
  inode.entries = inode.durable_entries;
  inode.pending_entries.clear();
}

}  // namespace uringmq::io
