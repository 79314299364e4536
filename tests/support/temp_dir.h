#pragma once

#include <stdlib.h>

#include <filesystem>
#include <string>

namespace gossipd::testing {

// A fresh directory under /tmp, removed with everything in it when it goes.
class TempDir {
 public:
  explicit TempDir(const std::string& prefix = "gossipd_test") {
    std::string tmpl = "/tmp/" + prefix + "_XXXXXX";
    path_ = mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace gossipd::testing
