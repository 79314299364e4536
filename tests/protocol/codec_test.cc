// The codecs of --compress, value by value: half and bfloat16 against the
// compiler's own conversions, int8's rounding bound, the wire sizes, hostile
// payloads, and error feedback's promise (what rounding takes comes back).
#include "protocol/wire/codec.h"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "protocol/collectives/error_feedback.h"

namespace gossipd::protocol {
namespace {

std::vector<float> normal_values(size_t n, float sigma, unsigned seed) {
  std::mt19937 gen(seed);
  std::normal_distribution<float> d(0.0f, sigma);
  std::vector<float> x(n);
  for (auto& v : x) v = d(gen);
  return x;
}

TEST(Codec, NamesParseBackAndUnknownOnesDoNot) {
  for (Codec c : {Codec::kNone, Codec::kFp16, Codec::kBf16, Codec::kInt8})
    EXPECT_EQ(parse_codec(codec_name(c)), c);
  EXPECT_FALSE(parse_codec("zip"));
  EXPECT_FALSE(parse_codec("FP16"));
  EXPECT_EQ(spec_name({Codec::kInt8, 64}), "int8/64");
  EXPECT_EQ(int8_block_problem(256), "");
  EXPECT_NE(int8_block_problem(0), "");
  EXPECT_NE(int8_block_problem(kMaxInt8Block + 1), "");
}

TEST(Codec, WireBytesPerValue) {
  EXPECT_EQ(encoded_bytes({}, 1000), 4000u);
  EXPECT_EQ(encoded_bytes({Codec::kFp16}, 1000), 2000u);
  EXPECT_EQ(encoded_bytes({Codec::kBf16}, 1000), 2000u);
  EXPECT_EQ(encoded_bytes({Codec::kInt8, 256}, 1000), 1000u + 4 * 4);  // 4 blocks, the last partial
  EXPECT_EQ(encoded_bytes({Codec::kInt8, 16}, 16), 20u);
}

TEST(Codec, EveryHalfDecodesAndEncodesBackToItself) {
  for (uint32_t h = 0; h <= 0xffff; ++h) {
    const float f = from_half(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(from_half(to_half(f)))) << h;
      continue;
    }
    ASSERT_EQ(to_half(f), h) << "half " << h << " = " << f;
  }
}

#ifdef __FLT16_MAX__
// GCC's _Float16 conversions round to nearest even, as IEEE says.
TEST(Codec, HalfRoundsAsTheCompilerDoes) {
  std::mt19937 gen(7);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 1000000; ++i) {
    const float f = std::bit_cast<float>(bits(gen));
    if (std::isnan(f)) continue;
    const auto want = std::bit_cast<uint16_t>(static_cast<_Float16>(f));
    ASSERT_EQ(to_half(f), want) << f;
  }
  for (float f : {65504.0f, 65519.99f, 65520.0f, 1e-8f, 5.96e-8f, 2.98e-8f, 6.1035e-5f, -0.0f})
    EXPECT_EQ(to_half(f), std::bit_cast<uint16_t>(static_cast<_Float16>(f))) << f;
}
#endif

TEST(Codec, BfloatKeepsTheTopSixteenBitsRoundedToNearestEven) {
  EXPECT_EQ(to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(from_bfloat16(to_bfloat16(3.0f)), 3.0f);
  // Halfway between two bfloat16 values: to the even one.
  EXPECT_EQ(to_bfloat16(std::bit_cast<float>(0x3f808000u)), 0x3f80);
  EXPECT_EQ(to_bfloat16(std::bit_cast<float>(0x3f818000u)), 0x3f82);
  EXPECT_EQ(to_bfloat16(std::bit_cast<float>(0x3f808001u)), 0x3f81);
  EXPECT_TRUE(std::isnan(from_bfloat16(to_bfloat16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isinf(from_bfloat16(to_bfloat16(std::numeric_limits<float>::infinity()))));
  for (float f : normal_values(10000, 3.0f, 1)) {
    const float back = from_bfloat16(to_bfloat16(f));
    EXPECT_LE(std::fabs(back - f), std::fabs(f) * (1.0f / 256.0f)) << f;  // 8 significant bits
  }
}

TEST(Codec, Int8IsWithinHalfAStepOfEveryValue) {
  const CodecSpec spec{Codec::kInt8, 64};
  auto x = normal_values(1000, 0.05f, 2);
  x[70] = 0.0f;
  std::fill(x.begin() + 128, x.begin() + 192, 0.0f);  // a block of zeros: scale 0
  const auto bytes = encode(spec, x);
  ASSERT_EQ(bytes.size(), encoded_bytes(spec, x.size()));
  std::vector<float> back(x.size());
  ASSERT_TRUE(decode(spec, bytes, back));
  for (size_t b = 0; b * 64 < x.size(); ++b) {
    float peak = 0.0f;
    for (size_t i = b * 64; i < std::min(x.size(), b * 64 + 64); ++i) peak = std::max(peak, std::fabs(x[i]));
    const float step = peak / 127.0f;
    for (size_t i = b * 64; i < std::min(x.size(), b * 64 + 64); ++i)
      ASSERT_LE(std::fabs(back[i] - x[i]), 0.5f * step * 1.0001f) << i;
  }
  EXPECT_EQ(back[70], 0.0f);
  EXPECT_EQ(back[150], 0.0f);
}

TEST(Codec, HostilePayloadsDoNotDecode) {
  const CodecSpec spec{Codec::kInt8, 16};
  auto bytes = encode(spec, normal_values(32, 1.0f, 3));
  std::vector<float> out(32);
  EXPECT_FALSE(decode(spec, std::span(bytes).first(bytes.size() - 1), out));
  EXPECT_FALSE(decode({Codec::kFp16}, bytes, out));  // 40 bytes are not 32 halves
  for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(), -1.0f}) {
    auto hostile = bytes;
    std::memcpy(hostile.data() + 4, &bad, 4);  // the second block's scale
    EXPECT_FALSE(decode(spec, hostile, out)) << bad;
  }
  EXPECT_TRUE(decode(spec, bytes, out));
}

TEST(Codec, NoneIsTheFloatsAsTheyAre) {
  const auto x = normal_values(100, 1.0f, 4);
  const auto bytes = encode({}, x);
  ASSERT_EQ(bytes.size(), x.size() * 4);
  EXPECT_EQ(std::memcmp(bytes.data(), x.data(), bytes.size()), 0);
}

// Error feedback: sending the same x T times, what arrived in total is
// T·x − e_T, so its mean is within |e_T| / T of x (without feedback every
// exchange would be off by the same rounding, in the same direction).
TEST(ErrorFeedback, WhatRoundingTakesComesBackInLaterExchanges) {
  const CodecSpec spec{Codec::kInt8, 256};
  const auto x = normal_values(512, 0.01f, 5);
  ErrorFeedback feedback(spec);
  std::vector<double> total(x.size(), 0.0);
  std::vector<float> got(x.size());
  constexpr int kRounds = 200;
  double first_err = 0.0;
  for (int t = 0; t < kRounds; ++t) {
    const auto data = feedback.encode(0, x);
    feedback.sent(0, x, data);
    ASSERT_TRUE(decode(spec, *data.bytes, got));
    for (size_t i = 0; i < x.size(); ++i) {
      total[i] += got[i];
      if (t == 0) first_err = std::max(first_err, std::fabs(static_cast<double>(got[i]) - x[i]));
    }
  }
  double mean_err = 0.0;
  for (size_t i = 0; i < x.size(); ++i) mean_err = std::max(mean_err, std::fabs(total[i] / kRounds - x[i]));
  ASSERT_GT(first_err, 0.0);
  EXPECT_LT(mean_err, first_err / 50) << "one exchange's error " << first_err;
}

TEST(ErrorFeedback, NothingIsOwedUntilAPayloadLeaves) {
  ErrorFeedback feedback({Codec::kFp16});
  const std::vector<float> x{1.0004f, 2.0f};  // 1.0004 rounds to 1 in half (a step is 1/1024)
  const auto a = feedback.encode(10, x);
  const auto b = feedback.encode(10, x);  // the first never left: the same bytes again
  EXPECT_EQ(*a.bytes, *b.bytes);
  feedback.sent(10, x, a);
  const auto c = feedback.encode(10, x);
  EXPECT_NE(*a.bytes, *c.bytes) << "the residual of the first send rides on the next";
}

// Push-sum doubles a segment's numerators to keep its weight up: the
// residual owed against them doubles too, so what it carries next is in the
// same units as the values it rides on.
TEST(ErrorFeedback, AResidualScalesWithTheParametersItIsOwedAgainst) {
  ErrorFeedback feedback({Codec::kFp16});
  const std::vector<float> x{1.0004f, 3.0f};  // 1.0004 rounds to 1 in half: 0.0004 owed
  feedback.sent(0, x, feedback.encode(0, x));
  feedback.scale(0, 2, 4.0f);
  feedback.scale(5, 2, 4.0f);  // nothing owed there: no change, no growth
  const std::vector<float> zero{0.0f, 0.0f};
  std::vector<float> got(2);
  ASSERT_TRUE(decode({Codec::kFp16}, *feedback.encode(0, zero).bytes, got));
  EXPECT_NEAR(got[0], 4 * 0.0004f, 2e-6f) << "four times the residual, sent on zeros";
  EXPECT_EQ(got[1], 0.0f);
}

}  // namespace
}  // namespace gossipd::protocol
