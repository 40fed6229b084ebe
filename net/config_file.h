#pragma once
// Small configuration files the broker rewrites whole (subscription groups, the run-time
// broker.conf overlay): read at start, replaced crash-safely on each change.
// Threading: the caller's; the disk is passed to each call (an io_uring disk belongs to the
// thread that first uses it).

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "io/disk.h"
#include "io/status.h"

namespace uringmq::net {

// The whole file at `path`, or nullopt when it does not exist; a file over max_bytes is
// corruption naming it.
io::Result<std::optional<std::string>> read_config_file(io::Disk& disk, const std::string& path,
                                                        uint64_t max_bytes);

// Replaces `path` (in directory `dir`) with `text`: writes path + ".tmp", fdatasyncs it, renames
// it over `path` and fsyncs the directory, so a crash leaves the old file or the new one. Errors
// name the file.
io::Status replace_config_file(io::Disk& disk, const std::string& dir, const std::string& path,
                               std::string_view text);

}  // namespace uringmq::net
