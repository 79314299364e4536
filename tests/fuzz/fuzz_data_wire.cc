// The direct data path's bytes from outside (protocol/data_wire.h,
// protocol/data_link.h): the input is decoded as a frame header, a Hello and
// an announcement, and streamed into a DataLink over a socketpair twice,
// whole and in 7-byte writes. Nothing may crash; what decodes re-encodes to
// the same bytes; every frame a link yields is whole and valid; and how the
// bytes were cut into writes changes nothing a link yields.
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "protocol/data_link.h"
#include "protocol/data_wire.h"

using namespace gossipd;
using namespace gossipd::protocol;

namespace {

constexpr uint64_t kMaxFrameBytes = 1 << 20;

// Checked in every build (assert is off in Release, where ctest replays).
void require(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_data_wire: %s\n", what);
    std::abort();
  }
}

bool valid(const wire::FrameHeader& h) {
  const bool kind = h.kind == wire::FrameKind::kPiece || h.kind == wire::FrameKind::kTensor;
  const size_t element = dtype_size(static_cast<proto::DType>(h.dtype));
  return kind && element != 0 && h.bytes % element == 0 && h.bytes <= kMaxFrameBytes;
}

struct Yield {
  std::vector<wire::HeaderBytes> headers;  // re-encoded
  std::vector<std::vector<std::byte>> payloads;
  bool broken = false;
  RejectReason reason{};
  bool eof = false;
};

// What a DataLink makes of `in` written `chunk` bytes at a time, the writer
// closing at the end.
Yield stream(std::span<const std::byte> in, size_t chunk) {
  int sv[2];
  require(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
  Fd writer(sv[0]);
  DataLink link("peer", kMaxFrameBytes);
  link.attach(Fd(sv[1]));
  Yield y;
  const auto take = [&] {
    const auto any = [](const wire::FrameHeader&) { return true; };
    const auto none = [](const wire::FrameHeader&) { return false; };
    while (auto got = link.take(any, none, [](const wire::FrameHeader&) {})) {
      const InFrame& f = *got;
      require(f.header.bytes == f.payload.size(), "frame bytes differ from its header");
      require(valid(f.header), "invalid frame header yielded");
      y.headers.push_back(wire::encode(f.header));
      const auto* p = static_cast<const std::byte*>(f.payload.data());
      y.payloads.emplace_back(p, p + f.payload.size());
    }
  };
  size_t at = 0;
  while (at < in.size() && !link.broken()) {
    const ssize_t n =
        ::send(writer.get(), in.data() + at, std::min(chunk, in.size() - at), MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) at += static_cast<size_t>(n);
    require(n > 0 || errno == EAGAIN || errno == EWOULDBLOCK, "socketpair send");
    link.read_available();
    take();
  }
  writer.reset();
  while (!link.broken() && !link.eof()) {
    link.read_available();
    take();
  }
  require(link.inbox_bytes() == 0, "inbox bytes not back to 0");
  y.broken = link.broken();
  y.reason = link.failure().reason;
  y.eof = link.eof();
  require(!y.broken || link.failure().rejected, "junk not marked as a reject");
  return y;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);

  if (size >= wire::kFrameHeaderBytes) {
    const auto first = in.first<wire::kFrameHeaderBytes>();
    const wire::Decoded d = wire::decode(first, kMaxFrameBytes);
    if (d.header) {
      require(valid(*d.header), "decode accepted an invalid header");
      const wire::HeaderBytes again = wire::encode(*d.header);
      // The reserved last 4 bytes are not read back.
      require(std::memcmp(again.data(), first.data(), wire::kFrameHeaderBytes - 4) == 0, "header round trip");
    } else {
      require(!d.detail.empty(), "a refused header without a reason");
    }
  }
  if (size >= wire::kHelloFixedBytes) {
    if (const auto n = wire::hello_length(in.first<wire::kHelloFixedBytes>())) {
      require(*n > wire::kHelloFixedBytes && *n <= wire::kHelloFixedBytes + 2 * wire::kMaxHelloString,
              "hello length out of range");
    }
  }
  if (const auto hello = wire::decode_hello(in)) {
    const auto again = wire::encode_hello(*hello);
    require(again.size() == size && std::memcmp(again.data(), data, size) == 0, "hello round trip");
  }
  if (const auto a = wire::decode_announcement(in)) {
    const auto again = wire::encode(*a);
    require(a->port != 0 && std::memcmp(again.data(), data, size) == 0, "announcement round trip");
  }

  const Yield whole = stream(in, size + 1);
  const Yield cut = stream(in, 7);
  require(whole.headers == cut.headers && whole.payloads == cut.payloads,
          "frames depend on how bytes were cut");
  require(whole.broken == cut.broken && whole.reason == cut.reason && whole.eof == cut.eof,
          "link state depends on how bytes were cut");
  return 0;
}
