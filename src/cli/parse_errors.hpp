// SPDX-License-Identifier: Apache-2.0
// CLI11's own messages ("The following argument was not expected: --dryrun", "DIR is required")
// reworded to the form of every other diagnostic, with "did you mean" for a misspelt flag.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace qpatch::cli {

// Return the lines (without "qpatch: error: ") that describe `error`, raised while parsing
// `args` for `app`.
std::vector<std::string> reword_parse_error(const CLI::ParseError& error,
                                            const CLI::App& app,
                                            const std::vector<std::string>& args);

// A validator that accepts one of `choices` and otherwise says which one was meant:
// "unknown engine 'vlm'; did you mean 'vllm'? (every engine's name, all, or ENGINE@REF ...)".
CLI::Validator one_of(std::string what, std::vector<std::string> choices);

// The --engine validator: ENGINE[@REF] or a comma-separated list of them (versions.hpp), with
// one_of's "did you mean" for a misspelt engine and the version's own message for a bad REF.
CLI::Validator engine_choice();
// The --engine help text: the registry's engine names, "all", ENGINE@REF, then `what`.
std::string engine_option_help(const std::string& what);

} // namespace qpatch::cli
