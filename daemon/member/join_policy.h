#pragma once

#include <string>

#include "daemon/config/run_options.h"
#include "proto/gossip.pb.h"
#include "protocol/collectives/segment_table.h"
#include "trainer/trainer.h"

namespace gossipd::daemon {

// What a joiner says about itself (endpoint, group, mode as
// Mode::join_name, model and optimizer sizes, segments); a contact compares
// it with its own.
proto::Hello describe(const std::string& algo, const proto::Member& self, trainer::Trainer& trainer,
                      const protocol::SegmentTable& segments);

// "" when a joiner that says `theirs` fits a cluster that says `mine`;
// otherwise why not, in one line that names the flag to change.
std::string refusal(const proto::Hello& mine, const proto::Hello& theirs);

}  // namespace gossipd::daemon
