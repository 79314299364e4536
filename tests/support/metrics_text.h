#pragma once

#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace gossipd::testing {

using Labels = std::map<std::string, std::string>;

// One series of a /metrics answer: `name{labels} value`.
struct Sample {
  std::string name;
  Labels labels;
  double value = 0;
};

// A /metrics answer (Prometheus text format) read line by line, so that a
// test asks for a family and its labels instead of searching the text.
class MetricsText {
 public:
  // Throws std::runtime_error naming the line that is not a sample or comment.
  explicit MetricsText(std::string text);

  // The value of `name` with exactly these labels (in any order); nullopt
  // when the answer has no such series.
  std::optional<double> value(const std::string& name, const Labels& labels = {}) const;
  const std::vector<Sample>& samples() const { return samples_; }
  const std::string& text() const { return text_; }

 private:
  std::string text_;
  std::vector<Sample> samples_;
};

// The text, for failure messages.
inline std::ostream& operator<<(std::ostream& os, const MetricsText& m) { return os << m.text(); }

}  // namespace gossipd::testing
