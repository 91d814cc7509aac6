// SPDX-License-Identifier: Apache-2.0
#include <qpatch/util/huge_pages.hpp>

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>

namespace qpatch::util {

namespace {

constexpr size_t k_huge_page = size_t{2} << 20;

size_t round_up(size_t bytes) {
  return (bytes + k_huge_page - 1) & ~(k_huge_page - 1);
}

} // namespace

void* allocate_large(size_t bytes) {
  if (bytes < k_huge_page_threshold) {
    return ::operator new(bytes);
  }
  const size_t length = round_up(bytes);
  if (length < bytes) {
    throw std::bad_alloc();
  }
  // Map one huge page more than needed and cut the ends off, so the block starts on a 2 MiB
  // boundary: THP backs only aligned 2 MiB ranges.
  void* mapped = mmap(
      nullptr, length + k_huge_page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mapped == MAP_FAILED) {
    throw std::bad_alloc();
  }
  const auto start = reinterpret_cast<uintptr_t>(mapped);
  const uintptr_t aligned = (start + k_huge_page - 1) & ~(uintptr_t{k_huge_page} - 1);
  if (aligned > start) {
    munmap(mapped, aligned - start);
  }
  const uintptr_t tail = start + length + k_huge_page - (aligned + length);
  if (tail > 0) {
    munmap(reinterpret_cast<void*>(aligned + length), tail);
  }
  madvise(reinterpret_cast<void*>(aligned), length, MADV_HUGEPAGE); // advice: failure is harmless
  return reinterpret_cast<void*>(aligned);
}

void release_large(void* block, size_t bytes) noexcept {
  if (block == nullptr) {
    return;
  }
  if (bytes < k_huge_page_threshold) {
    ::operator delete(block);
    return;
  }
  munmap(block, round_up(bytes));
}

std::shared_ptr<char[]> ByteArena::allocate(size_t bytes) {
  constexpr size_t k_block = k_block_size;
  if (bytes > k_block / 4) { // a large request gets a block of its own, leaving the current one
    const size_t size = std::max(bytes, k_huge_page_threshold); // mapped, never operator new
    return std::shared_ptr<char[]>(static_cast<char*>(allocate_large(size)),
                                   [size](char* block) { release_large(block, size); });
  }
  if (m_block == nullptr || m_size - m_used < bytes) {
    m_block = std::shared_ptr<char[]>(static_cast<char*>(allocate_large(k_block)),
                                      [](char* block) { release_large(block, k_block); });
    m_used = 0;
    m_size = k_block;
  }
  std::shared_ptr<char[]> range(m_block, m_block.get() + m_used);
  m_used += bytes;
  return range;
}

} // namespace qpatch::util
