// compare's progress line where a worker's /status stops answering: while
// it is busy the worker keeps the round it last reported, and once its
// control record says it ended it counts as at the end (its /status closes
// before its process exits; the line used to fall back to round 0 there).
#include "daemon/ctl/worker_watch.h"

#include <gtest/gtest.h>

#include <atomic>

#include "daemon/observe/http_server.h"
#include "daemon/observe/metrics_log.h"
#include "tests/support/temp_dir.h"

namespace gossipd::testing {
namespace {

using daemon::WatchedWorker;

// A process that runs until the test ends (killed by ChildProcess's destructor).
WatchedWorker sleeping_worker(const std::string& dir, const std::string& id) {
  WatchedWorker w;
  w.id = id;
  w.host = "127.0.0.1";
  w.control = dir + "/" + id + ".control";
  w.proc = std::make_unique<daemon::ChildProcess>(std::vector<std::string>{"/bin/sleep", "60"},
                                                  dir + "/" + id + ".out", dir + "/" + id + ".err");
  return w;
}

void write_record(daemon::JsonLinesWriter& control, const std::string& event, uint16_t http_port) {
  proto::ControlRecord r;
  r.set_event(event);
  r.set_http_port(http_port);
  control.write(r);
}

TEST(WorkerWatch, AWorkerWhoseStatusStopsAnsweringKeepsItsRoundAndIsAtTheEndOnceItsRecordSaysSo) {
  TempDir tmp("gossipd_watch_test");
  std::vector<WatchedWorker> workers;  // started first: it must not inherit the server's socket
  workers.push_back(sleeping_worker(tmp.path(), "w0"));
  std::atomic<int> round{7};
  auto server = std::make_unique<daemon::HttpServer>("127.0.0.1:0", [&](const std::string&) {
    daemon::HttpResponse r;
    r.body = "{\"round\":" + std::to_string(round.load()) + ",\"epoch\":1}";
    return r;
  });
  daemon::JsonLinesWriter control(workers[0].control);
  write_record(control, "listening", server->port());
  constexpr uint64_t kTotal = 58;

  auto l = daemon::look_at_workers(workers, kTotal, 2);  // learns the port from the record
  EXPECT_EQ(l.round, 0u);
  l = daemon::look_at_workers(workers, kTotal, 2);
  EXPECT_FALSE(l.all_done);
  EXPECT_EQ(l.round, 7u);
  EXPECT_EQ(l.epoch, 1u);

  server.reset();  // /status no longer answers: the worker is where it was
  l = daemon::look_at_workers(workers, kTotal, 2);
  EXPECT_EQ(l.round, 7u);
  EXPECT_EQ(l.epoch, 1u);

  write_record(control, "done", 0);  // it ended; its process still exits
  l = daemon::look_at_workers(workers, kTotal, 2);
  EXPECT_FALSE(l.all_done);
  EXPECT_EQ(l.round, kTotal);
  EXPECT_EQ(l.epoch, 2u);
}

}  // namespace
}  // namespace gossipd::testing
