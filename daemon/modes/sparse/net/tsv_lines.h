#pragma once

#include <cstdint>
#include <filesystem>
#include <string>

namespace gossipd::trainer::sparse {

// A text file's bytes; DataError "FILE: cannot read it ..." when it cannot be.
std::string read_text_file(const std::filesystem::path& file);
// DataError "NAME: ..." for an empty text (unless `may_be_empty`) or one
// whose last line has no newline: a truncated copy.
void check_whole_text(const std::string& name, const std::string& text, bool may_be_empty);

// A whole text file read at once and taken apart line by line into numeric
// fields separated by tabs or spaces. Every error is a DataError
// "FILE:LINE: reason" (or "FILE: reason").
class TsvLines {
 public:
  // An empty file is refused (a truncated copy) unless `may_be_empty`.
  explicit TsvLines(const std::filesystem::path& file, bool may_be_empty = false);
  // Text already in memory, named `name` in errors.
  static TsvLines of_text(std::string name, std::string text, bool may_be_empty = false);

  // The next line's fields, or false at the end of the file (blank lines are
  // skipped). Throws unless the line has exactly these fields: indices from
  // 1 to their maximum (returned 0-based), a finite float.
  bool next_triple(uint32_t& a, uint32_t& b, float& value, uint32_t max_a, uint32_t max_b);
  bool next_index(uint32_t& a, uint32_t max_a);

  size_t line() const { return line_; }
  const std::string& name() const { return file_; }
  [[noreturn]] void fail(const std::string& reason) const;

 private:
  bool start_line();  // skips blank lines; false at the end
  uint32_t index_field(uint32_t max_index);
  float float_field();
  void end_of_line();

  TsvLines(std::string name, std::string text, bool may_be_empty);

  std::string file_;
  std::string text_;
  const char* p_ = nullptr;
  const char* end_ = nullptr;
  size_t line_ = 0;
};

}  // namespace gossipd::trainer::sparse
