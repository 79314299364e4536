// The envelope decoder: any frames at all go through Validator::validate,
// which must drop (and count) or accept them, never crash; an accepted
// message must keep the promises the handlers rely on.
#include <cassert>

#include "protocol/wire/codec.h"
#include "tests/fuzz/harness.h"

using namespace gossipd;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static fuzz::Harness h({16, 1000});
  h.node->validator().set_open_types({proto::HELLO});
  h.each_valid(data, size, [](protocol::Message& m) {
    const auto& env = m.envelope;
    if (protocol::is_tensor_type(env.type())) {
      assert(m.payload.size() == 1);
      // A compressed payload (codec.h) holds its declared count encoded;
      // a plain one count fixed-width values.
      if (const auto spec = protocol::declared_spec(env)) {
        assert(m.payload[0].size() == protocol::encoded_bytes(*spec, env.count()));
        assert(protocol::decoded_count(*spec, m.payload[0].size()) == env.count());
      } else {
        assert(m.payload[0].size() == env.count() * protocol::dtype_size(env.dtype()));
      }
    } else {
      assert(m.payload.empty());
    }
  });
  return 0;
}
