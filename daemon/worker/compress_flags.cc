#include "daemon/worker/compress_flags.h"

#include <CLI/CLI.hpp>

#include "daemon/config/cli.h"
#include "daemon/config/mode_flags.h"
#include "daemon/worker/mode.h"

namespace gossipd::daemon {

void add_compress_flags(ModeFlags& f, CompressFlags& into, const std::string& what) {
  f.option("--compress", into.compress,
           "How the mode's exchanges travel: none (float32), fp16, bf16, or int8 (one float32 scale per "
           "--compress-block values); a lossy codec carries what it rounds off into the next exchange "
           "(error feedback). Every member must run the same")
      ->capture_default_str();
  f.describe("--compress", what);
  f.option("--compress-block", into.compress_block, "--compress int8: values per scale (16 to 65536)")
      ->capture_default_str();
}

protocol::CodecSpec checked_codec(const CompressFlags& flags) {
  const auto codec = protocol::parse_codec(flags.compress);
  if (!codec)
    throw UsageError("--compress '" + flags.compress + "' is not a codec: use none, fp16, bf16 or int8");
  if (const auto problem = protocol::int8_block_problem(flags.compress_block); !problem.empty())
    throw UsageError("--compress-block " + std::to_string(flags.compress_block) + ": " + problem);
  return {*codec, flags.compress_block};
}

std::vector<std::string> compress_launch_flags(const EntryContext& c) {
  protocol::CodecSpec codec;
  if (const auto problem = protocol::parse_spec(c.value_of("--compress", "none"), &codec); !problem.empty())
    throw UsageError("--compress " + problem);
  if (codec.lossless()) return {};
  std::vector<std::string> flags{"--compress", protocol::codec_name(codec.codec)};
  if (codec.codec == protocol::Codec::kInt8)
    flags.insert(flags.end(), {"--compress-block", std::to_string(codec.block)});
  return flags;
}

}  // namespace gossipd::daemon
