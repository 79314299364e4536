#pragma once

#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <memory>
#include <string>

namespace gossipd::testing {

// What the default logger writes while it lives (the daemon reports through
// spdlog), also when an assertion ends the test early. Needs spdlog, which
// every target using it links through the room it tests.
class CapturedLog {
 public:
  CapturedLog() : sink_(std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256)) {
    spdlog::default_logger()->sinks().push_back(sink_);
  }
  ~CapturedLog() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;

  std::string text() const {
    std::string all;
    for (const auto& line : sink_->last_formatted()) all += line;
    return all;
  }
  // Lines that hold `needle`.
  size_t count(const std::string& needle) const {
    size_t n = 0;
    for (const auto& line : sink_->last_formatted()) n += line.find(needle) != std::string::npos;
    return n;
  }

 private:
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink_;
};

}  // namespace gossipd::testing
