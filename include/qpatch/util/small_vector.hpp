// SPDX-License-Identifier: Apache-2.0
// A vector of trivially copyable values that keeps its first N elements inline. A 1T-parameter
// checkpoint has ~200k tensors and ~70k modules; one heap block per shape or per module's tensor
// list would dominate both time and peak memory.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <type_traits>
#include <vector>

namespace qpatch::util {

template <class T, size_t N> class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>);

public:
  SmallVector() = default;
  SmallVector(std::initializer_list<T> values) {
    for (const T& value : values) {
      push_back(value);
    }
  }
  template <class Range> static SmallVector from(const Range& range) {
    SmallVector out;
    for (const auto& value : range) {
      out.push_back(value);
    }
    return out;
  }
  SmallVector(const SmallVector& other) {
    for (const T& value : other) {
      push_back(value);
    }
  }
  SmallVector(SmallVector&& other) noexcept : m_storage(other.m_storage), m_size(other.m_size) {
    other.m_size = 0; // the heap block, if any, now belongs to this vector
  }
  SmallVector& operator=(const SmallVector& other) {
    if (this != &other) {
      SmallVector copy(other);
      *this = std::move(copy);
    }
    return *this;
  }
  SmallVector& operator=(SmallVector&& other) noexcept {
    if (this != &other) {
      release();
      m_storage = other.m_storage;
      m_size = other.m_size;
      other.m_size = 0;
    }
    return *this;
  }
  ~SmallVector() { release(); }

  void push_back(T value) {
    if (m_size < N) {
      m_storage.inline_items[m_size] = value;
    } else if (m_size == N) {
      auto* heap = new T[2 * N];
      std::copy(m_storage.inline_items, m_storage.inline_items + N, heap);
      heap[N] = value;
      m_storage.heap = {heap, 2 * N};
    } else {
      if (m_size == m_storage.heap.capacity) {
        auto* heap = new T[2 * m_size];
        std::copy(m_storage.heap.items, m_storage.heap.items + m_size, heap);
        delete[] m_storage.heap.items;
        m_storage.heap = {heap, 2 * m_size};
      }
      m_storage.heap.items[m_size] = value;
    }
    ++m_size;
  }
  void clear() {
    release();
    m_size = 0;
  }

  size_t size() const { return m_size; }
  bool empty() const { return m_size == 0; }
  const T* data() const { return m_size <= N ? m_storage.inline_items : m_storage.heap.items; }
  T* data() { return m_size <= N ? m_storage.inline_items : m_storage.heap.items; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + m_size; }
  const T& operator[](size_t i) const { return data()[i]; }
  const T& front() const { return data()[0]; }
  const T& back() const { return data()[m_size - 1]; }
  std::vector<T> to_vector() const { return std::vector<T>(begin(), end()); }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator==(const SmallVector& a, const std::vector<T>& b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
  }

private:
  void release() {
    if (m_size > N) {
      delete[] m_storage.heap.items;
    }
  }
  // Up to N items inline; beyond that the same bytes hold the heap block. A 1T-parameter
  // checkpoint keeps ~280k of these: every byte of a slot counts in its peak memory.
  union Storage {
    T inline_items[N];
    struct {
      T* items;
      size_t capacity;
    } heap;
  };
  Storage m_storage{};
  size_t m_size = 0;
};

} // namespace qpatch::util
