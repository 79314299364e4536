#include "tests/support/http_client.h"

#include "daemon/observe/http_client.h"
#include "tests/support/records.h"

namespace gossipd::testing {

std::string http_exchange(uint16_t port, const std::string& request) {
  return daemon::http_exchange("127.0.0.1", port, request);
}

std::string http_get(uint16_t port, const std::string& path) {
  return daemon::http_get("127.0.0.1", port, path);
}

proto::Status fetch_status(uint16_t port) {
  const std::string body = http_get(port, "/status");
  return body.empty() ? proto::Status{} : parse_json<proto::Status>(body);
}

MetricsText fetch_metrics(uint16_t port) { return MetricsText(http_get(port, "/metrics")); }

double rejected(uint16_t port, const std::string& reason) {
  return fetch_metrics(port).value("gossipd_messages_rejected_total", {{"reason", reason}}).value_or(0);
}

}  // namespace gossipd::testing
