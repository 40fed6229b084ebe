#pragma once
// Space of the file system holding a path (statvfs), for retention's disk-usage policy.
#include <cstdint>
#include <string_view>

#include <uringmq/options.h>

#include "io/status.h"

namespace uringmq::io {

// FsSpace: include/uringmq/options.h.

Result<FsSpace> file_system_space(std::string_view path);

}  // namespace uringmq::io
