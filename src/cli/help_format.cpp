// SPDX-License-Identifier: Apache-2.0
#include "help_format.hpp"

#include <qpatch/report/fit_width.hpp>

#include <sstream>

namespace qpatch::cli {

std::string fill(const std::string& text, std::size_t width) {
  std::string out;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    out += (out.empty() ? "" : "\n") + report::wrap(line, width, 0);
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
