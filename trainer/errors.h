#pragma once

#include <stdexcept>
#include <string>

namespace gossipd::trainer {

// Bad or missing input data (dataset files, snapshots). The message names the
// file and what to do; callers turn it into one line and exit code 2.
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace gossipd::trainer
