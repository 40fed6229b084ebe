#pragma once
// A fresh directory on the real file system for one test, removed with its contents at the end.
// Created under $URINGMQ_TEST_DIR, else the current directory (the build tree, which is on the
// same file system as a real store, unlike a tmpfs /tmp).

#include <string>

namespace uringmq::testing {

class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace uringmq::testing
