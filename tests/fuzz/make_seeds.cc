// Writes the seed corpus of every fuzz target into DIR/<target>/: real
// traffic captured from the code that sends it (state downloads, segments,
// collective pieces, membership messages) and a real checkpoint file, so
// the fuzzer starts from inputs that reach deep into each handler.
//
//   build/bin/fuzz_make_seeds tests/fuzz/corpus
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>

#include "daemon/cluster/checkpoint.h"
#include "daemon/cluster/state_transfer.h"
#include "daemon/modes/groups/shard_wire.h"
#include "daemon/modes/pipeline/pipeline_partition.h"
#include "daemon/modes/sparse/net/radix_net.h"
#include "daemon/modes/sparse/partition_file.h"
#include "daemon/plan/layer_profile.h"
#include "protocol/collectives/error_feedback.h"
#include "protocol/collectives/ring.h"
#include "protocol/collectives/segment_inbox.h"
#include "protocol/shm/payload_ring.h"
#include "protocol/wire/data_wire.h"
#include "tests/fuzz/harness.h"
#include "tests/support/envelope.h"
#include "tests/support/temp_dir.h"

using namespace gossipd;
namespace fs = std::filesystem;

namespace {

fs::path g_root;

void put(const std::string& target, const std::string& name, const std::string& bytes) {
  const fs::path dir = g_root / target;
  fs::create_directories(dir);
  std::ofstream(dir / name, std::ios::binary) << bytes;
}

uint8_t sender_index(const std::string& id) {
  for (uint8_t i = 0; i < std::size(fuzz::kSenders); ++i) {
    if (fuzz::kSenders[i] == id) return i;
  }
  return 2;
}

std::vector<std::string> frames_of(const protocol::RawMessage& raw) {
  std::vector<std::string> out;
  for (const auto& f : raw.frames) out.emplace_back(reinterpret_cast<const char*>(f.data()), f.size());
  return out;
}

// Everything delivered to "self" while `send` runs on nodes of `hub`.
std::string capture(protocol::InProcHub& hub, const std::function<void()>& send) {
  auto inbox = hub.bind("inproc-hub://self");
  send();
  std::string out;
  std::lock_guard lock(inbox->mutex);
  for (const auto& raw : inbox->queue) fuzz::write_message(out, sender_index(raw.peer), frames_of(raw));
  hub.unbind("inproc-hub://self");
  return out;
}

protocol::NodeOptions options(const std::string& id) {
  protocol::NodeOptions o;
  o.id = id;
  o.validation.cluster_id = "fuzz";
  return o;
}

proto::Envelope envelope(const std::string& sender, proto::MessageType type) {
  return testing::make_envelope("fuzz", sender, type);
}

std::string one(const std::string& sender, const proto::Envelope& e,
                const std::vector<std::string>& payload = {}) {
  std::vector<std::string> frames{e.SerializeAsString()};
  frames.insert(frames.end(), payload.begin(), payload.end());
  std::string out;
  fuzz::write_message(out, sender_index(sender), frames);
  return out;
}

std::string floats(size_t n, float v) {
  std::vector<float> f(n, v);
  return std::string(reinterpret_cast<const char*>(f.data()), n * sizeof(float));
}

std::string control_seeds(bool for_envelope) {
  std::string all;
  proto::Envelope hello = envelope("x", proto::HELLO);
  hello.mutable_hello()->set_endpoint("inproc-hub://x");
  hello.mutable_hello()->set_algo("crossover");
  put(for_envelope ? "envelope" : "membership", "hello", one("x", hello));
  all += one("x", hello);
  hello.mutable_hello()->set_ready(true);
  all += one("x", hello);
  proto::Envelope list = envelope("m1", proto::MEMBER_LIST);
  for (const char* id : {"m1", "m3", "self"}) {
    auto* m = list.mutable_member_list()->add_members();
    m->set_id(id);
    m->set_endpoint(std::string("inproc-hub://") + id);
    m->set_since_round(3);
  }
  all += one("m1", list);
  // Probes with piggybacked updates: a joiner's ALIVE, a suspicion of this
  // node (it refutes), a death; an ACK; a PING_REQ for m1.
  proto::Envelope ping = envelope("m2", proto::PING);
  ping.mutable_probe()->set_seq(7);
  const std::pair<const char*, proto::MemberUpdate::Kind> updates[] = {{"m3", proto::MemberUpdate::ALIVE},
                                                                       {"self", proto::MemberUpdate::SUSPECT},
                                                                       {"m1", proto::MemberUpdate::DEAD}};
  for (const auto& [id, kind] : updates) {
    proto::MemberUpdate* u = ping.mutable_probe()->add_updates();
    u->set_kind(kind);
    u->mutable_member()->set_id(id);
    u->mutable_member()->set_endpoint(std::string("inproc-hub://") + id);
  }
  all += one("m2", ping);
  // m3 accused by m1 and m2 (--evict-byzantine's quorum), then its HELLO again.
  proto::Envelope accused = envelope("m2", proto::PING);
  accused.mutable_probe()->set_seq(9);
  proto::MemberUpdate* a = accused.mutable_probe()->add_updates();
  a->set_kind(proto::MemberUpdate::ACCUSED);
  a->mutable_member()->set_id("m3");
  a->add_accusers("m1");
  a->add_accusers("m2");
  all += one("m2", accused);
  proto::Envelope ack = envelope("m1", proto::ACK);
  ack.mutable_probe()->set_seq(1);
  all += one("m1", ack);
  proto::Envelope req = envelope("m2", proto::PING_REQ);
  req.mutable_probe()->set_seq(8);
  req.mutable_probe()->set_target("m1");
  all += one("m2", req);
  proto::Envelope leave = envelope("m2", proto::LEAVE);
  leave.mutable_leave()->set_reason("SIGTERM");
  all += one("m2", leave);
  // A joiner asking for a share of the state; a partition's other side (m1, evicted above).
  proto::Envelope share = envelope("y", proto::HELLO);
  share.mutable_hello()->set_endpoint("inproc-hub://y");
  share.mutable_hello()->set_algo("crossover");
  share.mutable_hello()->mutable_share()->set_index(1);
  share.mutable_hello()->mutable_share()->set_of(2);
  all += one("y", share);
  proto::Envelope reunion = envelope("m1", proto::REUNION);
  reunion.mutable_reunion()->set_members(5);
  reunion.mutable_reunion()->set_lowest("a");
  all += one("m1", reunion);
  // A member holding too many inbound connections asks this one to close its.
  all += one("m2", envelope("m2", proto::CLOSE_CONNECTION));
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
    return 2;
  }
  g_root = argv[1];
  spdlog::set_level(spdlog::level::off);

  // membership: a join (HELLO, ready), a list, probes, a leave.
  put("membership", "session", control_seeds(false));
  // A joiner that says other sizes than the harness's state (40 + 8 floats):
  // the fuzzer's first membership crash (a donor read past its optimizer state).
  {
    proto::Envelope big = envelope("x", proto::HELLO);
    big.mutable_hello()->set_endpoint("inproc-hub://x");
    big.mutable_hello()->set_algo("crossover");
    big.mutable_hello()->set_parameter_floats(40);
    big.mutable_hello()->set_optimizer_state_floats(24);
    put("membership", "hello-other-sizes", one("x", big));
  }

  // state_download: a real download of 40 + 8 floats (segments 24 and 16) in
  // two shares, share 0 from m1 and share 1 from m2, in 64-byte chunks.
  {
    protocol::InProcHub hub;
    protocol::Node m1(options("m1"), hub);
    protocol::Node m2(options("m2"), hub);
    m1.add_peer("self", "inproc-hub://self");
    m2.add_peer("self", "inproc-hub://self");
    auto st = std::make_shared<daemon::ReplicaState>();
    st->params.assign(40, 0.25f);
    st->optimizer.assign(8, -1.0f);
    st->header.set_step(12);
    st->header.set_algo("crossover");
    daemon::seal(*st);
    const std::vector<uint64_t> lengths = {24, 16};
    put("state_download", "download", capture(hub, [&] {
          daemon::send_state(m1, "self", st, 0, daemon::share_span(lengths, 40, 8, 0, 2), 64,
                             std::chrono::seconds(1));
          daemon::send_state(m2, "self", st, 1, daemon::share_span(lengths, 40, 8, 1, 2), 64,
                             std::chrono::seconds(1));
        }));
  }

  // segment: round 1 of tag 3, segments 0..2 (16, 300, 5 floats) from m1 and m2.
  {
    protocol::InProcHub hub;
    protocol::Node m1(options("m1"), hub);
    protocol::Node m2(options("m2"), hub);
    m1.add_peer("self", "inproc-hub://self");
    m2.add_peer("self", "inproc-hub://self");
    put("segment", "round", capture(hub, [&] {
          protocol::SegmentInbox a(m1, 3, 1, false);
          protocol::SegmentInbox b(m2, 3, 1, false);
          const std::vector<size_t> lengths = {16, 300, 5};
          for (uint32_t s = 0; s < 3; ++s) {
            std::vector<float> v(lengths[s], 2.0f);
            a.send("self", s, v, std::nullopt, std::chrono::seconds(1));
            b.send("self", s, v, 0.5, std::chrono::seconds(1));
          }
        }));
  }

  // segment, compressed: the same round with int8 segments in blocks of 16
  // from m1 (the codec the round agrees to) and fp16 ones from m2 (refused).
  {
    protocol::InProcHub hub;
    protocol::Node m1(options("m1"), hub);
    protocol::Node m2(options("m2"), hub);
    m1.add_peer("self", "inproc-hub://self");
    m2.add_peer("self", "inproc-hub://self");
    put("segment", "round-int8", capture(hub, [&] {
          protocol::SegmentInbox a(m1, 3, 1, false);
          protocol::SegmentInbox b(m2, 3, 1, false);
          protocol::ErrorFeedback int8({protocol::Codec::kInt8, 16}), fp16({protocol::Codec::kFp16});
          const std::vector<size_t> lengths = {16, 300, 5};
          for (uint32_t s = 0; s < 3; ++s) {
            std::vector<float> v(lengths[s], 2.0f);
            v[0] = -3.0f;
            a.send("self", s, int8.encode(0, v), std::nullopt, std::chrono::seconds(1));
            b.send("self", s, fp16.encode(0, v), 0.5, std::chrono::seconds(1));
          }
        }));
  }

  // shard: m1 pushes to shard 0 (self's, 10 floats) twice (the repeat is
  // answered), m2 pushes, seeds and says it is done; pushes for shard 1 and
  // of 9 floats; a stranger's push.
  {
    protocol::InProcHub hub;
    protocol::Node m1(options("m1"), hub);
    protocol::Node m2(options("m2"), hub);
    m1.add_peer("self", "inproc-hub://self");
    m2.add_peer("self", "inproc-hub://self");
    put("shard", "pushes", capture(hub, [&] {
          const auto send = [&](protocol::Node& from, proto::ShardKind kind, uint64_t step, uint32_t shard,
                                size_t n) {
            daemon::ShardMessage m{kind, step, shard, {}};
            m.note.set_version(step > 0 ? step - 1 : 0);
            m.note.set_learning_rate(0.05f);
            daemon::send_shard(
                from, "self", daemon::shard_tags(protocol::tags::range(protocol::tags::User::kModes)).request,
                m, std::vector<float>(n, 0.5f), std::chrono::seconds(1));
          };
          send(m1, proto::SHARD_PUSH, 1, 0, 10);
          send(m1, proto::SHARD_PUSH, 1, 0, 10);
          send(m2, proto::SHARD_PUSH, 1, 0, 10);
          send(m2, proto::SHARD_SEED, 1, 0, 10);
          send(m1, proto::SHARD_PUSH, 2, 1, 10);
          send(m1, proto::SHARD_PUSH, 3, 0, 9);
          send(m2, proto::SHARD_DONE, 0, 0, 0);
        }));
  }

  // collective: the pieces m2 (self's left neighbour) sends in a 3-rank ring
  // allreduce of 100 floats in 16-float pieces: every step and piece.
  {
    std::string all;
    const size_t block[] = {34, 33, 33};
    for (uint32_t step = 0; step < 4; ++step) {
      for (uint32_t chunk = 0; chunk < 3; ++chunk) {
        proto::Envelope e = envelope("m2", proto::COLLECTIVE_CHUNK);
        e.set_collective_tag(5);
        e.set_collective_seq(0);
        e.set_step(step);
        e.set_chunk(chunk);
        e.set_dtype(proto::DTYPE_FLOAT32);
        const size_t n = std::min<size_t>(16, block[(step + 2) % 3] - 16 * chunk);
        e.set_count(n);
        all += one("m2", e, {floats(n, 1.0f)});
      }
    }
    put("collective", "ring", all);
  }

  // envelope: one of each message type, and the control ones.
  {
    proto::Envelope seg = envelope("m1", proto::SEGMENT);
    seg.set_segment_id(1);
    seg.set_count(10);
    seg.set_dtype(proto::DTYPE_FLOAT32);
    seg.set_push_sum_weight(0.5);
    put("envelope", "segment", one("m1", seg, {floats(10, 3.0f)}));
    proto::Envelope chunk = envelope("m2", proto::COLLECTIVE_CHUNK);
    chunk.set_count(4);
    chunk.set_dtype(proto::DTYPE_FLOAT64);
    put("envelope", "chunk", one("m2", chunk, {std::string(32, '\1')}));
    proto::Envelope state = envelope("m1", proto::STATE_CHUNK);
    state.mutable_state_header()->set_step(4);
    put("envelope", "state", one("m1", state, {std::string()}));
    put("envelope", "control", control_seeds(true));
  }

  // data_wire: what the direct data path carries. A stream of frames as a
  // peer sends them (pieces of float32, a tensor, an empty one, one big
  // enough to be read straight into its buffer), a Hello, an announcement.
  {
    std::string frames;
    const auto frame = [&](protocol::wire::FrameKind kind, uint64_t seq, uint32_t step, uint32_t chunk,
                           const std::string& payload, proto::DType dtype = proto::DTYPE_FLOAT32,
                           uint32_t codec_block = 0) {
      protocol::wire::FrameHeader h;
      h.kind = kind;
      h.dtype = static_cast<uint16_t>(dtype);
      h.codec_block = codec_block;
      h.tag = 5;
      h.seq = seq;
      h.step = step;
      h.chunk = chunk;
      h.bytes = payload.size();
      const auto bytes = protocol::wire::encode(h);
      frames.append(reinterpret_cast<const char*>(bytes.data()), bytes.size());
      frames += payload;
    };
    for (uint32_t chunk = 0; chunk < 3; ++chunk)
      frame(protocol::wire::FrameKind::kPiece, 0, 1, chunk, floats(16, 1.5f));
    frame(protocol::wire::FrameKind::kTensor, 9, 0, 0, floats(5, -2.0f));
    frame(protocol::wire::FrameKind::kPiece, 1, 0, 0, "");
    put("data_wire", "frames", frames);
    frames.clear();
    frame(protocol::wire::FrameKind::kPiece, 2, 0, 0, floats(5000, 0.25f));  // 20000 bytes
    put("data_wire", "big_frame", frames);
    frames.clear();  // a compressed allreduce's pieces: int8 in blocks of 16, fp16
    {
      std::vector<float> v(40, 0.75f);
      const auto as_text = [](const std::vector<std::byte>& b) {
        return std::string(reinterpret_cast<const char*>(b.data()), b.size());
      };
      const protocol::CodecSpec int8{protocol::Codec::kInt8, 16}, fp16{protocol::Codec::kFp16};
      frame(protocol::wire::FrameKind::kPiece, 3, 0, 0, as_text(protocol::encode(int8, v)),
            proto::DTYPE_INT8_BLOCKS, 16);
      frame(protocol::wire::FrameKind::kPiece, 3, 1, 0, as_text(protocol::encode(fp16, v)),
            proto::DTYPE_FLOAT16);
    }
    put("data_wire", "compressed_frames", frames);
    const auto hello =
        protocol::wire::encode_hello({protocol::kProtocolVersion, 0x0123456789abcdef, "fuzz", "m1"});
    put("data_wire", "hello", std::string(reinterpret_cast<const char*>(hello.data()), hello.size()));
    const auto ann = protocol::wire::encode(protocol::wire::Announcement{0x0123456789abcdef, 40123});
    put("data_wire", "announcement", std::string(reinterpret_cast<const char*>(ann.data()), ann.size()));
    // A payload's descriptor, as a peer on this host sends it in the payload's place.
    const protocol::PayloadDescriptor pd{"/gossipd-1-0123456789abcdef0123456789abcdef",
                                         protocol::kMinPayloadRingBytes, 64, 1000, 1};
    const auto pdb = protocol::encode_descriptor(pd);
    put("data_wire", "payload_descriptor",
        std::string(reinterpret_cast<const char*>(pdb.data()), pdb.size()));
  }

  // checkpoint: a real file.
  {
    testing::TempDir dir("gossipd_seeds");
    daemon::Checkpoint c;
    c.state.params.assign(40, 0.5f);
    c.state.optimizer.assign(8, 0.0f);
    c.state.header.set_step(200);
    c.state.header.set_algo("sgp");
    c.state.header.add_push_sum_weights(0.5);
    daemon::seal(c.state);
    c.node_id = "w1";
    auto* m = c.view.add_members();
    m->set_id("w1");
    m->set_endpoint("tcp://127.0.0.1:7101");
    const auto path = daemon::write_checkpoint(dir.path(), c, 1);
    std::ifstream in(path, std::ios::binary);
    put("checkpoint", "ckpt", std::string(std::istreambuf_iterator<char>(in), {}));
  }

  // sparse_files: a layer of 8 neurons, inputs, categories.
  put("sparse_files", "layer", "1\t1\t0.0625\n2\t1\t0.0625\n8\t8\t1\n");
  put("sparse_files", "inputs", "1\t3\t1\n1\t7\t1\n2\t8\t1\n");
  put("sparse_files", "categories", "1\n3\n999\n");
  {
    const auto net = trainer::sparse::make_radix_net(32, 2);
    put("sparse_files", "partition",
        daemon::partition_text(net, daemon::partition_neurons(net, 3, daemon::NeuronPartitioner::kBlock, {}),
                               3));
  }

  // partition_text: pipeline counts, a stage's checkpoint layout, the head
  // of a plan's JSON (gossipctl plan pipeline --json), a grid shape.
  put("partition_text", "counts", "3,7");
  put("partition_text", "layout",
      daemon::stage_name({2, 1}, {1, 0}, topology::parse_layer_counts("3,7", 10)));
  put("partition_text", "plan",
      R"({"plan":"pipeline","model":"mlp","batch":64,"micros":8,"partition":"1,4","bubble":0.31,)"
      R"("by_count":[{"stages":1,"partition":"5","step_s":0.0023}]})");
  put("partition_text", "grid", "4x2");
  {
    daemon::LayerProfile p;
    p.model = "in 28x28x1 dense:1x1x10:7850 sgd+momentum";
    p.machine = "host, CPU, 2 cores, OpenBLAS threads 1";
    p.date = "2026-11-26T08:30:00Z";
    p.input_floats = 784;
    p.update_s_per_param = 1e-9;
    p.copy_s_per_param = 2e-10;
    for (size_t b : {4, 16}) {
      p.sizes.push_back(b);
      p.at.push_back({trainer::LayerTiming{"dense", 1e-5 * b, 2e-5 * b, 0, 10, 7850, 1e-5 * b}});
    }
    put("partition_text", "profile", daemon::profile_text(p));
  }
  return 0;
}
