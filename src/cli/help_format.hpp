// SPDX-License-Identifier: Apache-2.0
// --help filled to 80 columns: CLI11 prints an option's or a subcommand's description on one
// line however long it is, and the man page (cmake/make_man.cmake) is that text.
#pragma once

#include <CLI/CLI.hpp>

#include <cstddef>
#include <string>

namespace qpatch::cli {

inline constexpr std::size_t k_help_width = 80;

// `text` with each of its lines wrapped by report::wrap: broken at spaces so that no line is
// wider than `width` (a word wider than that stays whole on its own line).
std::string fill(const std::string& text, std::size_t width);

// CLI11's formatter with descriptions filled to k_help_width beside the name column.
class FilledFormatter : public CLI::Formatter {
public:
  std::string make_option_desc(const CLI::Option* option) const override;
  std::string make_subcommand(const CLI::App* sub) const override;
};

} // namespace qpatch::cli
