#include "daemon/config/tc_rate.h"

#include <map>
#include <regex>

#include "daemon/config/cli.h"

namespace gossipd::daemon {
namespace {

const std::regex kRate("([0-9]+(\\.[0-9]+)?)([kmg]?)(bit|bps)");

}  // namespace

bool is_tc_rate(const std::string& rate) { return std::regex_match(rate, kRate); }

double tc_rate_bytes_per_second(const std::string& rate) {
  std::smatch m;
  if (!std::regex_match(rate, m, kRate)) throw UsageError("'" + rate + "' is not a tc rate like 100mbit");
  const std::map<std::string, double> prefix{{"", 1.0}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}};
  return std::stod(m[1].str()) * prefix.at(m[3].str()) / (m[4].str() == "bit" ? 8.0 : 1.0);
}

}  // namespace gossipd::daemon
