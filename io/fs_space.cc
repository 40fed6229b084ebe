#include "io/fs_space.h"

#include <sys/statvfs.h>

#include <cerrno>
#include <string>

namespace uringmq::io {

Result<FsSpace> file_system_space(std::string_view path) {
  struct statvfs st {};
  std::string p(path);
  if (statvfs(p.c_str(), &st) != 0) return Status::from_errno(errno, "statvfs " + p);
  FsSpace space;
  space.total_bytes = static_cast<uint64_t>(st.f_blocks) * st.f_frsize;
  space.available_bytes = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
  space.free_bytes = static_cast<uint64_t>(st.f_bfree) * st.f_frsize;
  return space;
}

}  // namespace uringmq::io
