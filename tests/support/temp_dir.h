#pragma once

#include <string>

namespace gossipd::testing {

// A fresh directory under /tmp, removed with everything in it when the
// object goes: at the end of the scope, and also when an ASSERT returns early
// or an exception unwinds the test. Every test that writes files makes one.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "gossipd_test");  // throws std::system_error
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace gossipd::testing
