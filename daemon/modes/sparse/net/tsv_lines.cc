#include "daemon/modes/sparse/net/tsv_lines.h"

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include "trainer/errors.h"

namespace gossipd::trainer::sparse {
namespace {

bool is_blank(char c) { return c == '\t' || c == ' ' || c == '\r'; }

}  // namespace

std::string read_text_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw DataError(file.string() + ": cannot read it (missing? check the path)");
  std::ostringstream all;
  all << in.rdbuf();
  return std::move(all).str();
}

void check_whole_text(const std::string& name, const std::string& text, bool may_be_empty) {
  if (text.empty() && !may_be_empty) throw DataError(name + ": empty (a truncated copy? copy it again)");
  if (!text.empty() && text.back() != '\n')
    throw DataError(name + ": the last line has no newline (a truncated copy? copy it again)");
}

TsvLines::TsvLines(const std::filesystem::path& file, bool may_be_empty)
    : TsvLines(file.string(), read_text_file(file), may_be_empty) {}

TsvLines TsvLines::of_text(std::string name, std::string text, bool may_be_empty) {
  return TsvLines(std::move(name), std::move(text), may_be_empty);
}

TsvLines::TsvLines(std::string name, std::string text, bool may_be_empty)
    : file_(std::move(name)), text_(std::move(text)) {
  check_whole_text(file_, text_, may_be_empty);
  p_ = text_.data();
  end_ = p_ + text_.size();
}

void TsvLines::fail(const std::string& reason) const {
  throw DataError(file_ + ":" + std::to_string(line_) + ": " + reason);
}

bool TsvLines::start_line() {
  while (p_ < end_) {
    ++line_;
    const char* q = p_;
    while (q < end_ && is_blank(*q)) ++q;
    if (*q != '\n') {
      p_ = q;
      return true;
    }
    p_ = q + 1;
  }
  return false;
}

uint32_t TsvLines::index_field(uint32_t max_index) {
  while (is_blank(*p_)) ++p_;
  uint32_t v = 0;
  const auto [q, ec] = std::from_chars(p_, end_, v);
  if (ec != std::errc() || q == p_ || (q < end_ && !is_blank(*q) && *q != '\n'))
    fail("expected a whole number from 1 to " + std::to_string(max_index));
  if (v < 1 || v > max_index) fail(std::to_string(v) + " is outside 1.." + std::to_string(max_index));
  p_ = q;
  return v - 1;
}

float TsvLines::float_field() {
  while (is_blank(*p_)) ++p_;
  float v = 0;
  const auto [q, ec] = std::from_chars(p_, end_, v);
  if (ec != std::errc() || q == p_ || (q < end_ && !is_blank(*q) && *q != '\n') || !std::isfinite(v))
    fail("expected a finite number as the last field");
  p_ = q;
  return v;
}

void TsvLines::end_of_line() {
  while (is_blank(*p_)) ++p_;
  if (*p_ != '\n') fail("more fields than expected");
  ++p_;
}

bool TsvLines::next_triple(uint32_t& a, uint32_t& b, float& value, uint32_t max_a, uint32_t max_b) {
  if (!start_line()) return false;
  a = index_field(max_a);
  b = index_field(max_b);
  value = float_field();
  end_of_line();
  return true;
}

bool TsvLines::next_index(uint32_t& a, uint32_t max_a) {
  if (!start_line()) return false;
  a = index_field(max_a);
  end_of_line();
  return true;
}

}  // namespace gossipd::trainer::sparse
