// SPDX-License-Identifier: Apache-2.0
#include "checkpoint/header_pipeline.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>

namespace qpatch::checkpoint {

namespace {

// Headers read on `workers` threads and handed to the consumer in file order. Workers stay at
// most `window` files ahead of the consumer (a bound on waiting headers); consumed tensor lists
// go back to the workers' parsers for reuse.
class OrderedReads {
public:
  OrderedReads(const std::filesystem::path& dir,
               const std::vector<std::string>& names,
               const safetensors::ReaderOptions& options,
               unsigned workers)
      : m_dir(dir), m_names(names), m_options(options), m_slots(names.size()),
        m_window(size_t{4} * workers) {}

  // One worker: claim the next file, wait for room, read it into its slot.
  void work() {
    try {
      safetensors::HeaderParser parser;
      for (size_t i = m_next_claim++; i < m_names.size(); i = m_next_claim++) {
        {
          std::unique_lock lock(m_mutex);
          m_room.wait(lock, [&] { return m_stop || i < m_consumed + m_window; });
          if (m_stop) {
            return;
          }
          if (!m_spare.empty()) {
            parser.reuse(std::move(m_spare.back()));
            m_spare.pop_back();
          }
        }
        auto result = parser.read(m_dir / m_names[i], m_names[i], m_options);
        {
          const std::lock_guard lock(m_mutex);
          m_slots[i].emplace(std::move(result));
        }
        m_ready.notify_all();
      }
    } catch (...) {
      const std::lock_guard lock(m_mutex);
      m_failure = std::current_exception();
      m_ready.notify_all();
    }
  }

  // On the caller's thread: each header in order, as soon as it is read. What a worker threw
  // (bad_alloc, in practice) is rethrown here.
  void consume_all(const HeaderConsumer& consume) {
    for (size_t i = 0; i < m_names.size(); ++i) {
      std::optional<Result<safetensors::Header>> result;
      {
        std::unique_lock lock(m_mutex);
        m_ready.wait(lock, [&] { return m_slots[i].has_value() || m_failure != nullptr; });
        if (!m_slots[i].has_value()) {
          std::rethrow_exception(m_failure);
        }
        result = std::move(m_slots[i]);
        m_slots[i].reset();
        m_consumed = i + 1;
      }
      m_room.notify_all();
      consume(i, *result);
      if (*result) {
        const std::lock_guard lock(m_mutex);
        m_spare.push_back(std::move((*result)->tensors));
      }
    }
  }

  // Workers stop at their next wait.
  void stop() {
    {
      const std::lock_guard lock(m_mutex);
      m_stop = true;
    }
    m_room.notify_all();
  }

private:
  const std::filesystem::path& m_dir;
  const std::vector<std::string>& m_names;
  const safetensors::ReaderOptions& m_options;
  std::vector<std::optional<Result<safetensors::Header>>> m_slots;
  const size_t m_window;
  std::mutex m_mutex;
  std::condition_variable m_ready; // a slot was filled, or a worker failed
  std::condition_variable m_room;  // the consumer moved on, or stopped
  std::atomic<size_t> m_next_claim{0};
  size_t m_consumed = 0;        // guarded by m_mutex
  bool m_stop = false;          // guarded by m_mutex: the consumer gave up (it threw)
  std::exception_ptr m_failure; // guarded by m_mutex: what a worker threw
  std::vector<std::vector<safetensors::TensorEntry>> m_spare; // guarded: consumed lists
};

} // namespace

void read_headers_in_order(const std::filesystem::path& dir,
                           const std::vector<std::string>& names,
                           const safetensors::ReaderOptions& options,
                           const HeaderConsumer& consume,
                           unsigned threads) {
  const unsigned hardware = std::max(1U, std::thread::hardware_concurrency());
  const auto workers =
      static_cast<unsigned>(std::min<size_t>(threads == 0 ? hardware : threads, names.size() / 2));
  if (workers <= 1) {
    safetensors::HeaderParser parser;
    for (size_t i = 0; i < names.size(); ++i) {
      auto result = parser.read(dir / names[i], names[i], options);
      consume(i, result);
      if (result) {
        parser.reuse(std::move(result->tensors));
      }
    }
    return;
  }
  OrderedReads reads(dir, names, options, workers);
  std::vector<std::thread> pool;
  // Threads are joined however this ends; an exception from a worker or from `consume` is
  // rethrown here, on the caller's thread, once every worker has stopped.
  const auto finish = [&] {
    reads.stop();
    for (std::thread& thread : pool) {
      thread.join();
    }
  };
  // A thread that cannot be started (EAGAIN under ulimit -v or -u) must not leave the started
  // ones joinable: std::thread's destructor would call std::terminate.
  try {
    pool.reserve(workers);
    for (unsigned w = 0; w < workers; ++w) {
      pool.emplace_back([&reads] { reads.work(); });
    }
    reads.consume_all(consume);
  } catch (...) {
    finish();
    throw;
  }
  finish();
}

} // namespace qpatch::checkpoint
