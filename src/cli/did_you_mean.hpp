// SPDX-License-Identifier: Apache-2.0
// "Did you mean" for subcommands, flags, --engine values and module names: a slip of the keyboard
// should be answered with the word the user meant, never acted on (issue 13).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qpatch::cli {

// The optimal-string-alignment distance: insertions, deletions, substitutions and adjacent
// transpositions each cost 1, so "inpsect" is 1 from "inspect" (plain Levenshtein says 2).
size_t edit_distance(std::string_view a, std::string_view b);

// Return the candidate closest to `word` when it is at most `max_distance` away (ties: the
// first candidate in order), or nothing.
std::optional<std::string>
closest(std::string_view word, const std::vector<std::string>& candidates, size_t max_distance = 2);

// Return up to `count` candidates nearest to `word`, nearest first, among those at most
// `max_distance` away; module names are long, so the bound scales with the word.
std::vector<std::string> nearest(std::string_view word,
                                 const std::vector<std::string>& candidates,
                                 size_t count,
                                 size_t max_distance);

// "; did you mean 'inspect'?" or "" when there is nothing close.
std::string did_you_mean(std::string_view word,
                         const std::vector<std::string>& candidates,
                         size_t max_distance = 2);

} // namespace qpatch::cli
