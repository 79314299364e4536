// The in-process hub's sink (InProcHub::set_sink): what reaches a member is
// handed over on the sender's thread, nothing is queued for receive(), and
// unbinding waits for a hand-over in progress, so what the sink refers to
// may go once its endpoint is unbound (InProcCluster's thousand members).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <future>
#include <thread>

#include "protocol/transport/dispatcher.h"
#include "protocol/transport/inproc_transport.h"
#include "protocol/transport/node.h"
#include "protocol/wire/errors.h"

namespace gossipd::protocol {
namespace {

using namespace std::chrono_literals;

OutFrame frame_of(const std::string& s) { return OutFrame::copy_of(s.data(), s.size()); }

TEST(InProcSink, TakesWhatIsSentOnTheSendersThreadAndQueuesNothing) {
  InProcHub hub;
  InProcTransport a(hub, "a"), b(hub, "b");
  std::thread::id handed_on;
  std::string got;
  hub.set_sink(b.endpoint(), [&](RawMessage raw) {
    handed_on = std::this_thread::get_id();
    got.assign(reinterpret_cast<const char*>(raw.frames.at(0).data()), raw.frames.at(0).size());
    EXPECT_EQ(raw.peer, "a");
  });
  a.connect("b", b.endpoint());
  const std::string payload = "hello";
  a.send("b", {frame_of(payload)}, 0ms);
  EXPECT_EQ(handed_on, std::this_thread::get_id());
  EXPECT_EQ(got, payload);
  EXPECT_FALSE(b.receive(0ms)) << "a message handed to the sink was queued as well";
  EXPECT_EQ(hub.sent_by("a").messages, 1u) << "what a sink takes is counted as sent";
}

TEST(InProcSink, OnlyForABoundEndpoint) {
  InProcHub hub;
  EXPECT_THROW(hub.set_sink("inproc-hub://nobody", [](RawMessage) {}), ProtocolConfigError);
}

TEST(InProcSink, UnbindWaitsForAHandOverInProgress) {
  InProcHub hub;
  InProcTransport a(hub, "a");
  auto b = std::make_unique<InProcTransport>(hub, "b");
  std::promise<void> entered, release;
  std::shared_future<void> released = release.get_future().share();
  std::atomic<bool> finished{false};
  hub.set_sink(b->endpoint(), [&](RawMessage) {
    entered.set_value();
    released.wait();
    finished = true;
  });
  a.connect("b", b->endpoint());
  std::thread sender([&] { a.send("b", {frame_of("x")}, 0ms); });
  entered.get_future().wait();
  auto closing = std::async(std::launch::async, [&] { b.reset(); });  // unbinds
  EXPECT_EQ(closing.wait_for(200ms), std::future_status::timeout) << "unbind did not wait for the sink";
  release.set_value();
  closing.wait();
  EXPECT_TRUE(finished);
  sender.join();
}

TEST(InProcSink, AsTheDispatcherDoesItFilesValidMessagesAndCountsTheRest) {
  InProcHub hub;
  NodeOptions o;
  o.id = "b";
  o.validation.cluster_id = "sink";
  o.initial_members = {"a", "b"};
  o.receive_thread = false;
  Node node(o, hub);
  hub.set_sink(node.endpoint(),
               [&](RawMessage raw) { dispatch(node.validator(), node.mailbox(), std::move(raw)); });
  InProcTransport a(hub, "a");
  a.connect("b", node.endpoint());
  proto::Envelope env;
  env.set_version(o.validation.version);
  env.set_cluster_id("sink");
  env.set_sender("a");
  env.set_type(proto::PING);
  const std::string good = env.SerializeAsString();
  a.send("b", {frame_of(good)}, 0ms);
  a.send("b", {frame_of("not an envelope")}, 0ms);
  EXPECT_TRUE(node.mailbox().pop(proto::PING, std::chrono::steady_clock::now(), {}));
  EXPECT_EQ(node.counters().total(), 1u) << "the junk was not counted";
}

}  // namespace
}  // namespace gossipd::protocol
