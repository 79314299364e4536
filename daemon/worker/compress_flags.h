#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "protocol/wire/codec.h"

namespace gossipd::daemon {

class ModeFlags;
struct EntryContext;

// gossipd run's --compress and --compress-block, as the modes that send
// through a codec take them (gossip segments, AllReduce-SGD's collectives).
struct CompressFlags {
  std::string compress = "none";  // protocol::Codec by name
  uint32_t compress_block = protocol::kDefaultInt8Block;
};

// Adds both flags, stored in `into`; `what` says what travels in the codec,
// the mode's note in the shared help ("gossip: its segments").
void add_compress_flags(ModeFlags& flags, CompressFlags& into, const std::string& what);
// The codec the flags name; UsageError in one line for an unknown codec or
// an int8 block that does not fit.
protocol::CodecSpec checked_codec(const CompressFlags& flags);
// gossipctl compare: the --compress (and --compress-block) flags that launch
// an entry with its protocol's --compress value; UsageError for a bad one.
std::vector<std::string> compress_launch_flags(const EntryContext& context);

}  // namespace gossipd::daemon
