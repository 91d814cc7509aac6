// SPDX-License-Identifier: Apache-2.0
// argv to run(), nothing else.
#include "run.hpp"

#include <qpatch/commit/interrupt.hpp>

#include <iostream>

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  qpatch::commit::install_interrupt_handlers();
  const std::vector<std::string> args(argv + 1, argv + argc);
  return qpatch::cli::run(args, std::cout, std::cerr, qpatch::cli::Terminal::detect());
}
