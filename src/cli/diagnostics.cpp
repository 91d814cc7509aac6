// SPDX-License-Identifier: Apache-2.0
#include "diagnostics.hpp"

#include <fstream>
#include <sstream>

namespace qpatch::cli {
namespace {

bool ends_with(std::string_view text, std::string_view tail) {
  return text.size() >= tail.size() && text.substr(text.size() - tail.size()) == tail;
}

std::string_view level_name(Level level) {
  switch (level) {
  case Level::error:
    return "error";
  case Level::warning:
    return "warning";
  case Level::note:
    return "note";
  }
  return "error";
}

} // namespace

std::string display_path(const std::string& dir_arg, const std::string& file) {
  if (file.empty() || file == dir_arg || dir_arg.empty()) {
    return file.empty() ? dir_arg : file;
  }
  const std::string prefix = ends_with(dir_arg, "/") ? dir_arg : dir_arg + "/";
  if (file.rfind(prefix, 0) == 0 || std::filesystem::path(file).is_absolute()) {
    return file;
  }
  return prefix + file;
}

std::string line_column(std::string_view text, uint64_t offset) {
  uint64_t line = 1;
  uint64_t column = 1;
  for (uint64_t i = 0; i < offset && i < text.size(); ++i) {
    const auto byte = static_cast<unsigned char>(text[i]);
    if (byte == '\n') {
      ++line;
      column = 1;
    } else if ((byte & 0xC0) != 0x80) { // a UTF-8 continuation byte is not a new character
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

std::string describe(const Error& error, const std::string& dir_arg) {
  Error shown = error;
  shown.path = display_path(dir_arg, error.path);
  if (error.offset && ends_with(error.path, ".json")) {
    // The file is small (a config or an index); reading it again costs nothing next to the
    // minutes a user spends counting bytes.
    std::ifstream in(std::filesystem::path(shown.path), std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (in) {
      shown.path += ": byte " + std::to_string(*error.offset) + " (" +
                    line_column(text.str(), *error.offset) + ")";
      shown.offset.reset();
    }
  }
  return shown.to_string();
}

void report(std::ostream& err, Level level, const std::string& text) {
  err << "qpatch: " << level_name(level) << ": " << text << "\n";
}

void report(std::ostream& err, const Error& error, const std::string& dir_arg) {
  report(err, Level::error, describe(error, dir_arg));
}

bool compile_only(const std::string& text, std::optional<engine::Pattern>& out, std::ostream& err) {
  if (text.empty()) {
    return true;
  }
  auto pattern = engine::Pattern::compile(text, "--only");
  if (!pattern) {
    report(err, Level::error, pattern.error().to_string());
    return false;
  }
  out = *pattern;
  return true;
}

} // namespace qpatch::cli
