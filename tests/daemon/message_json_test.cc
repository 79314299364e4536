// A Status's mode status: in an Any in the proto, in JSON under the mode's
// name, and back (daemon/observe/message_json.h).
#include "daemon/observe/message_json.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include "daemon/modes/grid/grid_status.pb.h"
#include "daemon/modes/groups/groups_status.pb.h"
#include "tests/support/records.h"

namespace gossipd::testing {
namespace {

proto::Status grid_status() {
  proto::Status s;
  s.set_id("w0");
  s.set_algo("grid");
  s.set_round(7);
  proto::GridStatus g;
  g.set_rows(2);
  g.set_cols(3);
  g.set_halo_bytes_per_step(1.5);
  s.mutable_mode_status()->PackFrom(g);
  return s;
}

using google::protobuf::util::MessageDifferencer;

// Equal fields, the mode's status compared unpacked (an Any's bytes depend
// on how it was packed, not on what it holds).
bool same(const proto::Status& a, const proto::Status& b) {
  proto::Status a_rest = a, b_rest = b;
  a_rest.clear_mode_status();
  b_rest.clear_mode_status();
  return MessageDifferencer::Equals(a_rest, b_rest) &&
         MessageDifferencer::Equals(daemon::mode_status<proto::GridStatus>(a),
                                    daemon::mode_status<proto::GridStatus>(b));
}

proto::ControlRecord without_status(proto::ControlRecord r) {
  r.clear_status();
  return r;
}

TEST(MessageJson, AModesStatusIsUnderItsNameWithItsType) {
  const std::string json = daemon::to_json(grid_status());
  EXPECT_NE(json.find("\"grid\":{\"@type\":\"type.googleapis.com/gossipd.proto.GridStatus\",\"rows\":2,"),
            std::string::npos)
      << json;
  EXPECT_EQ(json.find("mode_status"), std::string::npos) << json;
  EXPECT_NE(json.find("\"round\":\"7\""), std::string::npos) << "the shared fields as before: " << json;
}

TEST(MessageJson, AStatusAndAControlRecordComeBackAsTheyWere) {
  const proto::Status s = grid_status();
  proto::Status back;
  ASSERT_TRUE(daemon::from_json(daemon::to_json(s), back));
  EXPECT_TRUE(same(back, s)) << back.DebugString();
  EXPECT_EQ(daemon::mode_status<proto::GridStatus>(back).cols(), 3u);
  EXPECT_EQ(daemon::mode_status<proto::GroupsStatus>(back).groups(), 0u) << "another mode's: a default one";

  proto::ControlRecord r;
  r.set_event("done");
  r.set_round(9);
  *r.mutable_status() = s;
  // Strict, as the tests read every record: no field is left unknown.
  const proto::ControlRecord again = parse_json<proto::ControlRecord>(daemon::to_json(r));
  EXPECT_TRUE(MessageDifferencer::Equals(without_status(again), without_status(r))) << again.DebugString();
  EXPECT_TRUE(same(again.status(), s)) << again.DebugString();
}

TEST(MessageJson, AModeThisBinaryDoesNotKnowIsLeftOutNotTheRecord) {
  const std::string json =
      R"({"id":"w1","algo":"future","round":"3","future":{"@type":"type.googleapis.com/gossipd.proto.FutureStatus","x":1}})";
  proto::Status s;
  std::string why;
  ASSERT_TRUE(daemon::from_json(json, s, &why)) << why;
  EXPECT_EQ(s.round(), 3u);
  EXPECT_FALSE(s.has_mode_status());
  EXPECT_FALSE(daemon::from_json("{\"round\": [", s, &why));
  EXPECT_FALSE(why.empty());
}

TEST(MessageJson, AStatusWithoutAModeStatusIsPlain) {
  proto::Status s;
  s.set_algo("crossover");
  s.set_round(1);
  proto::Status back;
  ASSERT_TRUE(daemon::from_json(daemon::to_json(s), back));
  EXPECT_TRUE(MessageDifferencer::Equals(back, s)) << back.DebugString();
  EXPECT_EQ(daemon::to_json(s).find("crossover\":"), std::string::npos);
}

}  // namespace
}  // namespace gossipd::testing
