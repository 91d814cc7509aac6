// SPDX-License-Identifier: Apache-2.0
// argv to run(), and the one check run() cannot make: whether standard output took the bytes.
#include "exit_code.hpp"
#include "run.hpp"

#include <qpatch/commit/interrupt.hpp>

#include <cerrno>
#include <cstring>
#include <iostream>

int main(int argc, char** argv) {
  std::ios::sync_with_stdio(false);
  qpatch::commit::install_interrupt_handlers();
  const std::vector<std::string> args(argv + 1, argv + argc);
  const int code = qpatch::cli::run(args, std::cout, std::cerr, qpatch::cli::Terminal::detect());
  // A report or diff that did not reach its file (`> /dev/full`, a full disk, a closed pipe
  // with SIGPIPE ignored) must not pass for a complete one: a truncated fix.patch would.
  std::cout.flush();
  if (!std::cout) {
    // The stream keeps no error of its own: errno is the write's only when it is one a write
    // gives (the buffer may have failed long before this flush).
    const int error = errno;
    const bool from_write = error == ENOSPC || error == EPIPE || error == EIO || error == EFBIG ||
                            error == EBADF || error == EDQUOT;
    std::cerr << "qpatch: error: standard output: "
              << (from_write ? std::strerror(error) : "write failed")
              << ": what qpatch printed is incomplete\n";
    return qpatch::cli::to_int(qpatch::cli::ExitCode::write_failed);
  }
  return code;
}
