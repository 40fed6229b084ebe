#include "tests/support/temp_dir.h"

#include <cstdlib>
#include <filesystem>
#include <system_error>

#include "io/assert.h"

namespace uringmq::testing {

TempDir::TempDir() {
  const char* base = std::getenv("URINGMQ_TEST_DIR");
  std::string root = base != nullptr ? base : std::filesystem::current_path().string();
  std::string pattern = root + "/umq-test-XXXXXX";
  char* made = mkdtemp(pattern.data());
  UMQ_ASSERT_MSG(made != nullptr, "mkdtemp failed");
  path_ = made;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

}  // namespace uringmq::testing
