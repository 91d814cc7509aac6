// SPDX-License-Identifier: Apache-2.0
#include <qpatch/util/substring_set.hpp>

namespace qpatch::util {
namespace {

std::optional<size_t> least(std::optional<size_t> a, std::optional<size_t> b) {
  if (!a) {
    return b;
  }
  return b && *b < *a ? b : a;
}

} // namespace

uint32_t SubstringSet::child(uint32_t node, unsigned char byte) const {
  for (uint32_t e = m_nodes[node].first_edge; e != k_no_edge; e = m_edges[e].sibling) {
    if (m_edges[e].byte == byte) {
      return m_edges[e].child;
    }
  }
  return 0;
}

void SubstringSet::add(std::string_view text, size_t id) {
  uint32_t node = 0;
  for (const char c : text) {
    const auto byte = static_cast<unsigned char>(c);
    uint32_t next = child(node, byte);
    if (next == 0) {
      next = static_cast<uint32_t>(m_nodes.size());
      m_nodes.emplace_back();
      m_edges.push_back({next, m_nodes[node].first_edge, byte});
      m_nodes[node].first_edge = static_cast<uint32_t>(m_edges.size() - 1);
    }
    node = next;
  }
  m_nodes[node].best = least(m_nodes[node].best, id);
}

void SubstringSet::build() {
  // Breadth first: a node's failure link points to a shallower node, already linked.
  std::vector<uint32_t> queue;
  for (uint32_t e = m_nodes[0].first_edge; e != k_no_edge; e = m_edges[e].sibling) {
    m_nodes[m_edges[e].child].fail = 0;
    queue.push_back(m_edges[e].child);
  }
  for (size_t head = 0; head < queue.size(); ++head) {
    const uint32_t node = queue[head];
    m_nodes[node].best = least(m_nodes[node].best, m_nodes[m_nodes[node].fail].best);
    for (uint32_t e = m_nodes[node].first_edge; e != k_no_edge; e = m_edges[e].sibling) {
      m_nodes[m_edges[e].child].fail = step(m_nodes[node].fail, m_edges[e].byte);
      queue.push_back(m_edges[e].child);
    }
  }
}

uint32_t SubstringSet::step(uint32_t node, unsigned char byte) const {
  for (;;) {
    if (const uint32_t next = child(node, byte); next != 0) {
      return next;
    }
    if (node == 0) {
      return 0;
    }
    node = m_nodes[node].fail;
  }
}

std::optional<size_t> SubstringSet::first_in(std::string_view text) const {
  std::optional<size_t> first = m_nodes[0].best; // the empty string
  uint32_t node = 0;
  for (const char c : text) {
    node = step(node, static_cast<unsigned char>(c));
    first = least(first, m_nodes[node].best);
  }
  return first;
}

} // namespace qpatch::util
