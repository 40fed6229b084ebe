// Goal: the to-string functions built on io::enum_name name every enumerator (code_name,
// fault_target_name), enum_name answers its fallback for a value past the table, and
// Status::from_errno maps each errno with a Code of its own to it and every other to io_error.
// Method: every enumerator and errno against its expected answer, spelled out here.

#include "io/enum_name.h"

#include <gtest/gtest.h>

#include <cerrno>
#include <string_view>

#include "io/status.h"
#include "testing/faulty_disk.h"

namespace uringmq::io {
namespace {

TEST(EnumName, CodeNames) {
  EXPECT_STREQ(code_name(Code::ok), "ok");
  EXPECT_STREQ(code_name(Code::not_found), "not_found");
  EXPECT_STREQ(code_name(Code::already_exists), "already_exists");
  EXPECT_STREQ(code_name(Code::invalid_argument), "invalid_argument");
  EXPECT_STREQ(code_name(Code::corruption), "corruption");
  EXPECT_STREQ(code_name(Code::no_space), "no_space");
  EXPECT_STREQ(code_name(Code::busy), "busy");
  EXPECT_STREQ(code_name(Code::io_error), "io_error");
  EXPECT_STREQ(code_name(Code::locked), "locked");
  EXPECT_STREQ(code_name(Code::fail_stopped), "fail_stopped");
  EXPECT_STREQ(code_name(Code::too_large), "too_large");
  EXPECT_STREQ(code_name(Code::shut_down), "shut_down");
  EXPECT_STREQ(code_name(static_cast<Code>(200)), "unknown");
}

TEST(EnumName, FaultTargetNames) {
  EXPECT_STREQ(fault_target_name(FaultTarget::read), "read");
  EXPECT_STREQ(fault_target_name(FaultTarget::write), "write");
  EXPECT_STREQ(fault_target_name(FaultTarget::fdatasync), "fdatasync");
  EXPECT_STREQ(fault_target_name(FaultTarget::fsync_file), "fsync_file");
  EXPECT_STREQ(fault_target_name(FaultTarget::fsync_dir), "fsync_dir");
  EXPECT_STREQ(fault_target_name(FaultTarget::fallocate), "fallocate");
}

TEST(EnumName, PastTheTableIsTheFallback) {
  enum class Three : unsigned char { a, b, c };
  constexpr std::array<const char*, 3> kNames = {"a", "b", "c"};
  static_assert(std::string_view(enum_name(Three::c, kNames)) == "c");
  EXPECT_STREQ(enum_name(static_cast<Three>(3), kNames), "?");
  EXPECT_STREQ(enum_name(static_cast<Three>(3), kNames, "none"), "none");
}

TEST(StatusFromErrno, MapsErrnosToCodes) {
  EXPECT_EQ(Status::from_errno(ENOENT, "x").code(), Code::not_found);
  EXPECT_EQ(Status::from_errno(EEXIST, "x").code(), Code::already_exists);
  EXPECT_EQ(Status::from_errno(ENOSPC, "x").code(), Code::no_space);
  EXPECT_EQ(Status::from_errno(EDQUOT, "x").code(), Code::no_space);
  EXPECT_EQ(Status::from_errno(EINVAL, "x").code(), Code::invalid_argument);
  EXPECT_EQ(Status::from_errno(ENAMETOOLONG, "x").code(), Code::invalid_argument);
  EXPECT_EQ(Status::from_errno(EWOULDBLOCK, "x").code(), Code::locked);
  EXPECT_EQ(Status::from_errno(EFBIG, "x").code(), Code::too_large);
  EXPECT_EQ(Status::from_errno(EIO, "x").code(), Code::io_error);
  EXPECT_EQ(Status::from_errno(EPERM, "x").code(), Code::io_error);
  EXPECT_EQ(Status::from_errno(EIO, "x").sys_errno(), EIO);
}

}  // namespace
}  // namespace uringmq::io
