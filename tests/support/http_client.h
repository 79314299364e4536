#pragma once

#include <cstdint>
#include <string>

#include "proto/gossip.pb.h"
#include "tests/support/metrics_text.h"

namespace gossipd::testing {

// Sends raw bytes to 127.0.0.1:port and returns all the server answers
// ("" when the connection fails or is closed without an answer).
std::string http_exchange(uint16_t port, const std::string& request);

// GET path; returns the body of a 200 answer, "" otherwise.
std::string http_get(uint16_t port, const std::string& path);

// GET /status, parsed. A daemon that does not answer (not yet, or no
// longer) gives an empty Status (no id, round 0); an answer that is not a
// Status throws.
proto::Status fetch_status(uint16_t port);

// GET /metrics, parsed; no samples when the daemon does not answer.
MetricsText fetch_metrics(uint16_t port);

// gossipd_messages_rejected_total{reason="..."} from /metrics; 0 when the
// daemon has counted none (or does not answer).
double rejected(uint16_t port, const std::string& reason);

}  // namespace gossipd::testing
