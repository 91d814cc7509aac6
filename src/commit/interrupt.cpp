// SPDX-License-Identifier: Apache-2.0
#include <qpatch/commit/interrupt.hpp>

#include <signal.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

namespace qpatch::commit {
namespace {

std::atomic<int> g_depth{0};
std::atomic<int> g_signal{0};
std::atomic<int> g_seen{0};
std::atomic<long> g_renames{0};

void on_signal(int sig) {
  if (g_depth.load() > 0) {
    int expected = 0;
    g_signal.compare_exchange_strong(expected, sig);
    expected = 0;
    g_seen.compare_exchange_strong(expected, sig);
    return;
  }
  ::signal(sig, SIG_DFL); // async-signal-safe: die of the signal, as the user asked
  ::raise(sig);
}

} // namespace

std::string signal_name(int sig) {
  switch (sig) {
  case SIGINT:
    return "SIGINT";
  case SIGTERM:
    return "SIGTERM";
  case SIGHUP:
    return "SIGHUP";
  default:
    return "signal " + std::to_string(sig);
  }
}

void install_interrupt_handlers() {
  struct sigaction action {};
  action.sa_handler = on_signal;
  action.sa_flags = SA_RESTART;
  sigemptyset(&action.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    ::sigaction(sig, &action, nullptr);
  }
  // A file-size limit (ulimit -f) kills with SIGXFSZ, wordless and leaving the temp file; ignored,
  // the write fails with EFBIG instead, and the error path names the file and removes the temp.
  ::signal(SIGXFSZ, SIG_IGN);
}

int take_interrupt() {
  return g_signal.exchange(0);
}

int interrupt_seen() {
  return g_seen.load();
}

int pending_interrupt() {
  return g_signal.load();
}

InterruptGuard::InterruptGuard() {
  ++g_depth;
}

InterruptGuard::~InterruptGuard() {
  --g_depth;
}

void before_rename_fault() {
  const char* at = std::getenv("QPATCH_FAULT_AT_RENAME");
  if (at == nullptr || *at == '\0') {
    return;
  }
  if (++g_renames != std::strtol(at, nullptr, 10)) {
    return;
  }
  const char* name = std::getenv("QPATCH_FAULT_SIGNAL");
  int sig = SIGKILL;
  if (name != nullptr && std::strcmp(name, "INT") == 0) {
    sig = SIGINT;
  } else if (name != nullptr && std::strcmp(name, "TERM") == 0) {
    sig = SIGTERM;
  } else if (name != nullptr && std::strcmp(name, "HUP") == 0) {
    sig = SIGHUP;
  }
  ::raise(sig);
}

} // namespace qpatch::commit
