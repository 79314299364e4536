#include "protocol/wire/message.h"

#include <cstring>

namespace gossipd::protocol {

void add_floats(float* dst, const std::byte* src, size_t count) {
  // memcpy per element compiles to unaligned vector loads: zmq payloads are
  // not guaranteed to be 4-byte aligned.
  for (size_t i = 0; i < count; ++i) {
    float v;
    std::memcpy(&v, src + i * sizeof(float), sizeof(float));
    dst[i] += v;
  }
}

size_t dtype_size(proto::DType dtype) {
  switch (dtype) {
    case proto::DTYPE_FLOAT32:
      return 4;
    case proto::DTYPE_FLOAT64:
      return 8;
    case proto::DTYPE_UINT8:
      return 1;
    default:
      return 0;
  }
}

bool is_tensor_type(proto::MessageType type) {
  return type == proto::SEGMENT || type == proto::COLLECTIVE_CHUNK || type == proto::STATE_CHUNK;
}

OutFrame OutFrame::copy_of(const void* data, size_t size) {
  // Not zeroed first: the copy writes every byte (a segment of megabytes
  // was written twice).
  std::shared_ptr<std::byte[]> buf = std::make_shared_for_overwrite<std::byte[]>(size);
  if (size > 0) std::memcpy(buf.get(), data, size);
  return OutFrame{buf.get(), size, std::move(buf)};
}

OutFrame OutFrame::from_string(std::string bytes) {
  auto buf = std::make_shared<std::string>(std::move(bytes));
  return OutFrame{buf->data(), buf->size(), buf};
}

OutFrame OutFrame::borrowed(const void* data, size_t size, std::shared_ptr<const void> owner) {
  return OutFrame{data, size, std::move(owner)};
}

Frame::Frame(std::vector<std::byte> bytes) {
  auto buf = std::make_shared<const std::vector<std::byte>>(std::move(bytes));
  data_ = buf->data();
  size_ = buf->size();
  owner_ = std::move(buf);
}

OutFrame envelope_frame(const proto::Envelope& envelope) {
  return OutFrame::from_string(envelope.SerializeAsString());
}

}  // namespace gossipd::protocol
