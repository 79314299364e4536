#include "daemon/plan/link_model.h"

#include <charconv>
#include <cmath>
#include <stdexcept>
#include <utility>

namespace gossipd::daemon {

double parse_bandwidth(const std::string& text) {
  static const std::pair<const char*, double> kUnits[] = {
      {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1}};
  double scale = 1;
  std::string number = text;
  for (const auto& [unit, factor] : kUnits) {
    const std::string u = unit;
    if (text.size() > u.size() && text.compare(text.size() - u.size(), u.size(), u) == 0) {
      number = text.substr(0, text.size() - u.size());
      scale = factor;
      break;
    }
  }
  double value = 0;
  const auto [end, ec] = std::from_chars(number.data(), number.data() + number.size(), value);
  if (ec != std::errc() || end != number.data() + number.size() || !(value > 0) || !std::isfinite(value)) {
    throw std::invalid_argument("bandwidth '" + text +
                                "' is not a positive rate such as 100mbit, 1gbit, 500kbit (bits per second)");
  }
  return value * scale / 8;
}

}  // namespace gossipd::daemon
