// The direct data path's bytes from outside (protocol/wire/data_wire.h,
// protocol/collectives/data_link.h): the input is decoded as a frame header, a Hello and
// an announcement, and streamed into a DataLink over a socketpair: whole,
// in 7-byte writes, and in 5-byte writes with a posted receive (copying, then
// adding) waiting for the first float32 frame of the first header's size.
// Nothing may crash; what decodes re-encodes to the same bytes; every frame a
// link yields is whole and valid; how the bytes were cut into writes changes
// nothing a link yields; a posted receive gets exactly the frame the inbox
// would have had (added: its floats added to zeros), and only that one.
// The input is also the content of a shared-memory ring (protocol/shm/shm_ring.h)
// as another process may have written it: every frame the reader takes lies
// inside the ring, or the reader refuses it. And it is a payload descriptor
// (protocol/shm/payload_ring.h) as a peer on this host sends it: one that
// decodes re-encodes to the same bytes, and read against a real ring it is
// refused or yields exactly the length it names.
#include <sys/socket.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <vector>

#include "protocol/collectives/data_link.h"
#include "protocol/shm/payload_ring.h"
#include "protocol/shm/shm_pipe.h"
#include "protocol/shm/shm_ring.h"
#include "protocol/wire/codec.h"
#include "protocol/wire/data_wire.h"

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
  const bool kind =
      h.kind >= wire::FrameKind::kPiece && static_cast<uint16_t>(h.kind) <= wire::kLastFrameKind;
  const auto dtype = static_cast<proto::DType>(h.dtype);
  // A compressed dtype's elements are bytes (codec.h), its int8 block one that fits.
  const size_t element =
      protocol::spec_of(dtype, h.codec_block) && dtype_size(dtype) == 0 ? 1 : dtype_size(dtype);
  return kind && element != 0 && h.bytes % element == 0 && h.bytes <= kMaxFrameBytes;
}

// A receive posted for the whole stream.
struct Posting {
  size_t bytes = 0;
  bool add = false;
  std::vector<float> into;  // bytes / 4 zeros before
  bool done = false;
};

struct Yield {
  std::vector<wire::HeaderBytes> headers;  // re-encoded
  std::vector<std::vector<std::byte>> payloads;
  bool broken = false;
  RejectReason reason{};
  bool eof = false;
};

// What a DataLink makes of `in` written `chunk` bytes at a time, the writer
// closing at the end.
Yield stream(std::span<const std::byte> in, size_t chunk, uint32_t tag, Posting* posting = nullptr) {
  int sv[2];
  require(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
  Fd writer(sv[0]);
  DataLink link("peer", kMaxFrameBytes, tag);
  link.attach(Fd(sv[1]));
  const DataLink::Match floats = [](const wire::FrameHeader& h) { return h.dtype == proto::DTYPE_FLOAT32; };
  DataLink::Post post;
  if (posting) {
    posting->into.assign(posting->bytes / sizeof(float), 0.0f);
    post = {&floats, reinterpret_cast<std::byte*>(posting->into.data()), posting->bytes, posting->add};
    link.post(&post);
  }
  Yield y;
  const auto take = [&] {
    const auto any = [](const wire::FrameHeader&) { return true; };
    const auto none = [](const wire::FrameHeader&) { return false; };
    while (auto got = link.take(any, none, [](const wire::FrameHeader&) {})) {
      const InFrame& f = *got;
      require(f.header.bytes == f.payload.size(), "frame bytes differ from its header");
      require(valid(f.header), "invalid frame header yielded");
      // The link answers shared-memory frames itself (this one may not share).
      require(f.header.kind == wire::FrameKind::kPiece || f.header.kind == wire::FrameKind::kTensor,
              "a shared-memory frame yielded");
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
  link.withdraw(&post);
  if (posting) posting->done = post.done;
  y.broken = link.broken();
  y.reason = link.failure().reason;
  y.eof = link.eof();
  require(!y.broken || link.failure().rejected, "junk not marked as a reject");
  return y;
}

// Streams `in` with a receive posted (copying, then adding) and compares
// with `plain`, the same stream unposted.
void check_posted(std::span<const std::byte> in, uint32_t tag, const Yield& plain) {
  size_t bytes = sizeof(float);
  if (in.size() >= wire::kFrameHeaderBytes) {
    if (const auto d = wire::decode(in.first<wire::kFrameHeaderBytes>(), kMaxFrameBytes).header;
        d && d->dtype == proto::DTYPE_FLOAT32)
      bytes = d->bytes;
  }
  // The frame the post should get: the first float32 one of that size.
  size_t target = plain.headers.size();
  for (size_t i = 0; i < plain.headers.size() && target == plain.headers.size(); ++i) {
    const auto h = wire::decode(plain.headers[i], kMaxFrameBytes).header;
    if (h->dtype == proto::DTYPE_FLOAT32 && h->bytes == bytes) target = i;
  }
  for (const bool add : {false, true}) {
    Posting posting;
    posting.bytes = bytes;
    posting.add = add;
    const Yield y = stream(in, 5, tag, &posting);
    require(y.broken == plain.broken && y.reason == plain.reason, "a posted receive changed the link state");
    require(posting.done == (target < plain.headers.size()), "the posted receive missed its frame");
    auto rest_headers = plain.headers;
    auto rest_payloads = plain.payloads;
    if (posting.done) {
      std::vector<float> want(bytes / sizeof(float), 0.0f);
      add_floats(want.data(), plain.payloads[target].data(), want.size());
      const void* expect = add ? static_cast<const void*>(want.data()) : plain.payloads[target].data();
      require(bytes == 0 || std::memcmp(posting.into.data(), expect, bytes) == 0,
              "the posted receive got other bytes");
      rest_headers.erase(rest_headers.begin() + static_cast<ptrdiff_t>(target));
      rest_payloads.erase(rest_payloads.begin() + static_cast<ptrdiff_t>(target));
    }
    require(y.headers == rest_headers && y.payloads == rest_payloads, "a posted receive changed the inbox");
  }
}

// The writer publishes empty frames up to the input's length, then the
// input overwrites what it wrote: headers, wrap marks and payloads hostile.
void ring(std::span<const std::byte> in) {
  constexpr size_t kCap = 4096;
  alignas(64) static std::byte mem[2 * kCap];
  std::memset(mem, 0, sizeof mem);
  const size_t mapped = ShmRing::mapping_bytes(kCap);
  require(mapped <= sizeof mem, "ring mapping size");
  ShmRing writer(mem, kCap, true), reader(mem, kCap, false);
  size_t published = 0;
  for (; published + 64 <= std::min(in.size(), kCap); published += 64) {
    require(writer.reserve(0) != nullptr, "room for an empty frame");
    writer.commit(0);
  }
  std::byte* data = mem + mapped - kCap;
  std::memcpy(data, in.data(), published);
  try {
    for (int k = 0; k < 128; ++k) {
      const auto f = reader.front();
      if (!f) break;
      const auto* p = reinterpret_cast<const std::byte*>(f->data.data());
      require(p >= data && p + f->data.size_bytes() <= data + kCap, "a frame outside the ring");
      reader.pop();
    }
  } catch (const std::runtime_error&) {
  }
}

// A pipe whose positions (the writer's and the reader's, another
// process's) are the input's: readable() refuses them or stays inside the ring.
void pipe(std::span<const std::byte> in) {
  constexpr size_t kCap = 4096;
  alignas(64) static std::byte mem[2 * kCap];
  std::memset(mem, 0, sizeof mem);
  const size_t mapped = ShmPipe::mapping_bytes(kCap);
  require(mapped <= sizeof mem, "pipe mapping size");
  ShmPipe reader(mem, kCap, true);
  // The control block's first word is the tail, its second cache line's the head.
  if (in.size() >= 16) {
    std::memcpy(mem, in.data(), 8);
    std::memcpy(mem + 64, in.data() + 8, 8);
  }
  const std::byte* data = mem + mapped - kCap;
  try {
    for (int k = 0; k < 4; ++k) {
      const auto s = reader.readable();
      require(s.empty() || (s.data() >= data && s.data() + s.size() <= data + kCap),
              "bytes outside the pipe");
      if (s.empty()) break;
      reader.consume(s.size());
    }
  } catch (const std::runtime_error&) {
  }
}

// A descriptor from the input, pointed at a real ring (so that the reader's
// bounds and header checks run against a mapping, not a refused name).
void payload_descriptor(std::span<const std::byte> in) {
  const auto d = decode_descriptor(in);
  if (!d) return;
  const std::vector<std::byte> again = encode_descriptor(*d);
  require(again.size() == in.size() && std::memcmp(again.data(), in.data(), in.size()) == 0,
          "descriptor round trip");
  static PayloadRingWriter writer(kMinPayloadRingBytes, std::chrono::milliseconds(0));
  static PayloadRingReader reader;
  static const std::vector<std::byte> filler(1000, std::byte{7});
  writer.put(filler);  // some slots written, some taken below, some reclaimed
  PayloadDescriptor aimed = *d;
  aimed.ring = writer.name();
  aimed.ring_bytes = writer.bytes();
  std::string why;
  const auto got = reader.take(aimed, &why);
  require(got ? got->size() == aimed.length : !why.empty(), "a descriptor taken wrongly");
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
      require(std::memcmp(again.data(), first.data(), wire::kFrameHeaderBytes) == 0, "header round trip");
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

  // The link expects the first header's group tag, so seeds get past it.
  uint32_t tag = 0;
  if (size >= 12) std::memcpy(&tag, data + 8, sizeof tag);
  const Yield whole = stream(in, size + 1, tag);
  const Yield cut = stream(in, 7, tag);
  require(whole.headers == cut.headers && whole.payloads == cut.payloads,
          "frames depend on how bytes were cut");
  require(whole.broken == cut.broken && whole.reason == cut.reason && whole.eof == cut.eof,
          "link state depends on how bytes were cut");
  check_posted(in, tag, whole);
  ring(in);
  pipe(in);
  payload_descriptor(in);
  return 0;
}
