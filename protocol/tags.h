#pragma once

#include <cstdint>

namespace gossipd::protocol {

// Every collective tag and gossip protocol tag in one place. The mailbox
// keys messages by (tag, seq, sender): two users of one tag would take each
// other's messages, so each gets a range of its own here. Ranges indexed by
// a view epoch start fresh sequence numbers with every view.
namespace tags {

constexpr uint32_t kAllreduce = 1;               // AllReduce-SGD's ring over the start-up members
constexpr uint32_t kStartup = 2;                 // the gossip workers' start-up barrier
constexpr uint32_t kCrossover = 0x10000;         // CrossoverGossip segments (seq = round)
constexpr uint32_t kHierarchical = 0x20000;      // HierarchicalCrossover's inter-group segments
constexpr uint32_t kPushSum = 0x30000;           // PushSumGossip segments
constexpr uint32_t kReady = 0x8000;              // | a gossip tag: pacing notes "I am in this round" (seq = round)
constexpr uint32_t kGroupBase = 0x40000000;      // | view epoch << 8 | group: hierarchical groups
constexpr uint32_t kConsensusBase = 0x50000000;  // + view epoch: consensus measurements
constexpr uint32_t kReformedBase = 0x60000000;   // + view epoch: AllReduce's re-formed rings

// For ranges indexed by the view epoch: epochs wrap within 2^22 views.
constexpr uint32_t epoch_offset(uint32_t view_epoch) { return view_epoch & 0x3fffffu; }

}  // namespace tags
}  // namespace gossipd::protocol
