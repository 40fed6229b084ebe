// Shared main for the test executables: GoogleTest, plus a scratch directory per run under
// $TMPDIR (or the build tree) for tests that use real files.
//
// A run in which no test failed but some test skipped itself (GTEST_SKIP: something outside the
// project, such as a loop mount, is missing here) exits 77, which CTest reports as Skipped
// (SKIP_RETURN_CODE 77 in tests/CMakeLists.txt): a run that did not check everything is never
// counted as passed. The output names each skipped test and why.
#include <gtest/gtest.h>

namespace {
constexpr int kSkipReturnCode = 77;
}  // namespace

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  const ::testing::UnitTest& run = *::testing::UnitTest::GetInstance();
  if (rc == 0 && run.skipped_test_count() > 0) return kSkipReturnCode;
  return rc;
}
