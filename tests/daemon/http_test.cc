#include <gtest/gtest.h>

#include <asio.hpp>

#include "daemon/ctl/prometheus_targets.h"
#include "daemon/member/node_setup.h"
#include "daemon/observe/http_client.h"
#include "daemon/observe/http_server.h"
#include "daemon/observe/metrics.h"
#include "protocol/transport/node.h"
#include "tests/support/http_client.h"

namespace gossipd::daemon {
namespace {

using testing::http_exchange;

HttpResponse routes(const std::string& path) {
  if (path == "/status") return {200, "application/json", "{\"ok\":true}"};
  if (path == "/boom") throw std::runtime_error("handler failed");
  return {404, "text/plain", "not found\n"};
}

TEST(Http, ServesRoutesAndRejectsTheRest) {
  HttpServer server("127.0.0.1:0", routes);
  ASSERT_GT(server.port(), 0);
  std::string ok = http_exchange(server.port(), "GET /status?x=1 HTTP/1.1\r\nHost: a\r\n\r\n");
  EXPECT_EQ(ok.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << ok;
  EXPECT_NE(ok.find("Content-Type: application/json"), std::string::npos);
  EXPECT_NE(ok.find("\r\n\r\n{\"ok\":true}"), std::string::npos);
  EXPECT_EQ(http_exchange(server.port(), "GET /nope HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(http_exchange(server.port(), "POST /status HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405", 0), 0u);
  EXPECT_EQ(http_exchange(server.port(), "garbage\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(http_exchange(server.port(), "GET /boom HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 500", 0), 0u);
}

TEST(Http, OversizedRequestIsDroppedAndServerKeepsServing) {
  HttpServer server("127.0.0.1:0", routes);
  std::string huge = "GET /status HTTP/1.1\r\nX: " + std::string(20000, 'a') + "\r\n\r\n";
  EXPECT_EQ(http_exchange(server.port(), huge), "");
  // A silent client does not block others.
  asio::io_context io;
  asio::ip::tcp::socket idle(io);
  idle.connect({asio::ip::make_address("127.0.0.1"), server.port()});
  EXPECT_EQ(http_exchange(server.port(), "GET /status HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 200", 0), 0u);
}

// A server that accepts and never answers (a stopped member: the kernel
// completes the handshake) is "" once the client's time is up, not a hang;
// one that answers is read whole within it.
TEST(Http, TheClientGivesUpOnAServerThatAcceptsAndNeverAnswers) {
  asio::io_context io;
  asio::ip::tcp::acceptor silent(io, {asio::ip::make_address("127.0.0.1"), 0});
  const uint16_t port = silent.local_endpoint().port();
  EXPECT_EQ(daemon::http_get("127.0.0.1", port, "/status", std::chrono::milliseconds(200)), "");
  EXPECT_EQ(
      daemon::http_exchange("127.0.0.1", port, "GET / HTTP/1.1\r\n\r\n", std::chrono::milliseconds(200)), "");
  HttpServer server("127.0.0.1:0", routes);
  EXPECT_EQ(daemon::http_get("127.0.0.1", server.port(), "/status"), "{\"ok\":true}");
}

TEST(Http, BadAddressesAreClearErrors) {
  EXPECT_THROW(HttpServer("127.0.0.1", routes), std::invalid_argument);
  EXPECT_THROW(HttpServer("127.0.0.1:99999", routes), std::invalid_argument);
  EXPECT_THROW(HttpServer("not-an-ip:80", routes), std::invalid_argument);
  HttpServer first("127.0.0.1:0", routes);
  EXPECT_THROW(HttpServer("127.0.0.1:" + std::to_string(first.port()), routes), std::runtime_error);
}

TEST(Metrics, RendersPrometheusText) {
  MetricsRegistry m;
  m.counter("gossipd_rounds_total", "Rounds completed").add(3);
  m.counter("gossipd_messages_rejected_total", "Rejected", {{"reason", "bad_size"}}).add();
  m.counter("gossipd_messages_rejected_total", "Rejected", {{"reason", "bad_size"}}).add();
  m.gauge("gossipd_members", "Members in view").set(5);
  m.sampled("gossipd_bytes_sent_total", "Bytes sent", "counter", [] {
    return std::vector<std::pair<Labels, double>>{{{{"peer", "b\"1"}}, 1024}};
  });
  const std::string text = m.render();
  EXPECT_NE(text.find("# TYPE gossipd_rounds_total counter\ngossipd_rounds_total 3\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("gossipd_messages_rejected_total{reason=\"bad_size\"} 2\n"), std::string::npos);
  EXPECT_NE(text.find("# TYPE gossipd_members gauge\ngossipd_members 5\n"), std::string::npos);
  EXPECT_NE(text.find("gossipd_bytes_sent_total{peer=\"b\\\"1\"} 1024\n"), std::string::npos) << text;
  EXPECT_THROW(m.gauge("gossipd_rounds_total", "x"), std::logic_error);
}

// A segment of NaN refused by the node shows in /metrics twice: as one more
// rejection of reason non_finite, and held against the member that sent it.
TEST(Metrics, ANonFiniteRejectionIsCountedAgainstItsSender) {
  protocol::NodeOptions o;
  o.id = "w0";
  protocol::Node node(o);
  MetricsRegistry m;
  register_transport_metrics(m, node);
  EXPECT_EQ(m.render().find("gossipd_non_finite_rejected_total{"), std::string::npos) << "nobody blamed yet";
  node.reject_log().reject("w3", protocol::RejectReason::kNonFinite, "segment 0");
  node.reject_log().reject("w3", protocol::RejectReason::kNonFinite, "segment 1");
  node.reject_log().reject("w2", protocol::RejectReason::kCodec, "segment 0 in fp16");
  const std::string text = m.render();
  EXPECT_NE(text.find("gossipd_non_finite_rejected_total{peer=\"w3\"} 2\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("gossipd_non_finite_rejected_total{peer=\"w2\"}"), std::string::npos)
      << "a codec mismatch is not held against its sender";
  EXPECT_NE(text.find("gossipd_messages_rejected_total{reason=\"non_finite\"} 2\n"), std::string::npos)
      << text;
}

// The state a member is in, one series at 1 that follows it (what
// deploy/prometheus/'s cut-off and failure alerts read), and its rejoins.
TEST(Metrics, TheMembersStateIsOneSeriesThatFollowsIt) {
  WorkerState state;
  MetricsRegistry m;
  register_state_metrics(m, state);
  state.update([](proto::Status& s) { s.set_state("training"); });
  EXPECT_NE(m.render().find("gossipd_state{state=\"training\"} 1\n"), std::string::npos) << m.render();
  state.update([](proto::Status& s) {
    s.set_state("cut_off");
    s.set_rejoins(2);
  });
  const std::string text = m.render();
  EXPECT_NE(text.find("gossipd_state{state=\"cut_off\"} 1\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("state=\"training\""), std::string::npos) << "the state it left is still a series";
  EXPECT_NE(text.find("gossipd_rejoins 2\n"), std::string::npos) << text;
}

// /history holds the last evaluations, oldest first; / is the page, which
// draws them from /history and /status.
TEST(StatusRoutes, HistoryKeepsTheLastEvaluationsAndTheRootIsThePage) {
  protocol::NodeOptions o;
  o.id = "w0";
  protocol::Node node(o);
  WorkerState state;
  MetricsRegistry m;
  EvaluationHistory history(2);
  const HttpHandler routes = status_routes(state, m, node, history);
  EXPECT_EQ(routes("/history").body, "[]\n");
  for (uint64_t round : {10, 20, 30}) {
    proto::EpochRecord r;
    r.set_round(round);
    history.add(r);
  }
  const std::string json = routes("/history").body;
  EXPECT_EQ(json.find("\"round\":\"10\""), std::string::npos) << "past the capacity: " << json;
  EXPECT_LT(json.find("\"round\":\"20\""), json.find("\"round\":\"30\"")) << json;
  const HttpResponse page = routes("/");
  EXPECT_EQ(page.status, 200);
  EXPECT_NE(page.content_type.find("text/html"), std::string::npos);
  EXPECT_NE(page.body.find("json(\"/history\")"), std::string::npos);
  EXPECT_EQ(routes("/nothing").status, 404);
}

// compare's targets file is Prometheus' file_sd format, its strings escaped.
TEST(PrometheusTargets, OneGroupPerMemberWithItsLabels) {
  const std::string json =
      prometheus_targets_json({{{"127.0.0.1:8080"}, {{"cluster", "c\"1"}, {"member", "w0"}}},
                               {{"127.0.0.1:8081"}, {{"member", "w1"}}}});
  EXPECT_EQ(
      json,
      "[{\"targets\": [\"127.0.0.1:8080\"], \"labels\": {\"cluster\": \"c\\\"1\", \"member\": \"w0\"}},\n"
      " {\"targets\": [\"127.0.0.1:8081\"], \"labels\": {\"member\": \"w1\"}}]\n");
  EXPECT_THROW(write_prometheus_targets("/nonexistent-dir/targets.json", {}), std::runtime_error);
}

}  // namespace
}  // namespace gossipd::daemon
