#pragma once
// The byte layout the message fuzz targets read, and its writer (for the
// seed corpus). An input is a sequence of messages as a peer could send them:
//
//   message := sender:u8  frames:u8  frame*      (frames taken mod 8)
//   frame   := length:u16 (little-endian)  bytes[length]
//
// `sender` picks the transport identity from the target's list (mod its
// size); lengths beyond the input's end are clipped. So every byte string
// is a valid input, and mutations of a seed stay close to real traffic.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "protocol/wire/message.h"

namespace gossipd::fuzz {

inline std::vector<protocol::RawMessage> read_messages(const uint8_t* data, size_t size,
                                                       std::span<const std::string> senders) {
  std::vector<protocol::RawMessage> out;
  size_t at = 0;
  auto take = [&](size_t n) {
    n = std::min(n, size - at);
    const uint8_t* p = data + at;
    at += n;
    return std::span<const uint8_t>(p, n);
  };
  while (at + 2 <= size) {
    protocol::RawMessage raw;
    raw.peer = senders[data[at] % senders.size()];
    const size_t frames = data[at + 1] % 8;
    at += 2;
    for (size_t f = 0; f < frames; ++f) {
      const auto len = take(2);
      const size_t n = len.size() == 2 ? (len[0] | (size_t{len[1]} << 8)) : 0;
      const auto bytes = take(n);
      std::vector<std::byte> frame(bytes.size());
      if (!bytes.empty()) std::memcpy(frame.data(), bytes.data(), bytes.size());
      raw.frames.emplace_back(std::move(frame));
    }
    out.push_back(std::move(raw));
  }
  return out;
}

// One message in that layout.
inline void write_message(std::string& out, uint8_t sender, const std::vector<std::string>& frames) {
  out.push_back(static_cast<char>(sender));
  out.push_back(static_cast<char>(frames.size()));
  for (const auto& f : frames) {
    const size_t n = std::min<size_t>(f.size(), 0xffff);
    out.push_back(static_cast<char>(n & 0xff));
    out.push_back(static_cast<char>(n >> 8));
    out.append(f, 0, n);
  }
}

}  // namespace gossipd::fuzz
