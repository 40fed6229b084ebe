// Shared main for the test executables: GoogleTest, plus a scratch directory per run under
// $TMPDIR (or the build tree) for tests that use real files.
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
