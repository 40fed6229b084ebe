#pragma once
// Space of the file system holding a path (statvfs), for retention's disk-usage policy.
#include <cstdint>
#include <string_view>

#include "io/status.h"

namespace uringmq::io {

struct FsSpace {
  uint64_t total_bytes = 0;
  uint64_t available_bytes = 0;  // to unprivileged users (f_bavail)
  double used_ratio() const {
    return total_bytes == 0 ? 0.0
                            : 1.0 - static_cast<double>(available_bytes) /
                                        static_cast<double>(total_bytes);
  }
};

Result<FsSpace> file_system_space(std::string_view path);

}  // namespace uringmq::io
