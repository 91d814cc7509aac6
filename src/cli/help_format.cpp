// SPDX-License-Identifier: Apache-2.0
#include "help_format.hpp"

#include <sstream>

namespace qpatch::cli {

std::string fill(const std::string& text, std::size_t width) {
  std::string out;
  std::istringstream lines(text);
  std::string line;
  bool first_line = true;
  while (std::getline(lines, line)) {
    out += first_line ? "" : "\n";
    first_line = false;
    std::istringstream words(line);
    std::string word;
    std::size_t column = 0;
    while (words >> word) {
      if (column > 0 && column + 1 + word.size() > width) {
        out += "\n";
        column = 0;
      } else if (column > 0) {
        out += " ";
        ++column;
      }
      out += word;
      column += word.size();
    }
  }
  return out;
}

std::string FilledFormatter::make_option_desc(const CLI::Option* option) const {
  // format_help indents every line after a '\n' to the name column.
  return fill(CLI::Formatter::make_option_desc(option), k_help_width - get_column_width());
}

std::string FilledFormatter::make_subcommand(const CLI::App* sub) const {
  std::stringstream out;
  CLI::detail::format_help(out,
                           sub->get_display_name(),
                           fill(sub->get_description(), k_help_width - get_column_width()),
                           get_column_width());
  return out.str();
}

} // namespace qpatch::cli
