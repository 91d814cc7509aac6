// SPDX-License-Identifier: Apache-2.0
// The whole command line as a function: tests call run() in-process with their own streams and
// terminal; main() only forwards argv. Only src/cli/ prints, parses options or picks exit codes.
#pragma once

#include "terminal.hpp"

#include <ostream>
#include <string>
#include <vector>

namespace qpatch::cli {

// Run qpatch with `args` (without the program name); return the exit status.
int run(const std::vector<std::string>& args,
        std::ostream& out,
        std::ostream& err,
        const Terminal& terminal = {});

} // namespace qpatch::cli
