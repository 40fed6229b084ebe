#pragma once
// Shared by the fuzz replay tests (tests/unit/fuzz_replay/*_test.cc): feeds every file of a fuzz
// target's committed seed corpus (fuzz/corpus/<name>/), and every prefix of each, to the
// target's logic (its <name>_fuzz_one, #included with URINGMQ_FUZZ_NO_ENTRY; fuzz/README.md).
// Each input is an exact-size heap copy, so the ASan build catches a read past its end. A
// violated invariant aborts the test binary, which CTest reports as a failure.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace uringmq::testing {

// <repo>/fuzz/corpus/<name>, found from this header's path (tests/unit/fuzz_replay/).
inline std::filesystem::path fuzz_corpus_dir(const std::string& name) {
  return std::filesystem::path(__FILE__).parent_path() / ".." / ".." / ".." / "fuzz" / "corpus" /
         name;
}

inline std::vector<uint8_t> read_corpus_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// Runs fuzz_one on every corpus file and its prefixes; returns how many files were replayed.
template <typename FuzzOne>
size_t replay_fuzz_corpus(const std::string& name, FuzzOne fuzz_one) {
  std::filesystem::path dir = fuzz_corpus_dir(name);
  EXPECT_TRUE(std::filesystem::is_directory(dir)) << dir;
  if (!std::filesystem::is_directory(dir)) return 0;
  std::vector<std::filesystem::path> paths;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.is_regular_file()) paths.push_back(entry.path());
  }
  std::sort(paths.begin(), paths.end());
  for (const std::filesystem::path& path : paths) {
    std::vector<uint8_t> data = read_corpus_file(path);
    SCOPED_TRACE(path.filename().string());
    for (size_t n = 0; n <= data.size(); n++) {
      std::vector<uint8_t> prefix(data.begin(), data.begin() + static_cast<ptrdiff_t>(n));
      EXPECT_EQ(fuzz_one(prefix.data(), prefix.size()), 0);
    }
  }
  return paths.size();
}

}  // namespace uringmq::testing
