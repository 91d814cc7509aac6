// SPDX-License-Identifier: Apache-2.0
// A set of byte strings, each with an id, asked for the least id among those that occur in a
// text (an Aho-Corasick automaton: one pass over the text, whatever the number of strings).
// SGLang tests each plain compressed-tensors `ignore` entry as a substring of the layer name;
// testing a few hundred entries one by one was an eighth of `--check` on a 1T-parameter MoE
// (engine/compressed_tensors_rules.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

namespace qpatch::util {

class SubstringSet {
public:
  // Add `text` with `id`; a text added twice keeps its least id. Call before build().
  void add(std::string_view text, size_t id);
  // Link the automaton; add() after it is an error.
  void build();
  bool empty() const { return m_nodes.size() == 1 && !m_nodes[0].best; }
  // The least id among the added strings that occur in `text` (the empty string occurs in
  // every text), or nothing.
  std::optional<size_t> first_in(std::string_view text) const;

private:
  // Edges live in one array, each node's as a list (most nodes have one): a vector per node
  // made building and freeing the automaton cost more than using it (one per rules object).
  static constexpr uint32_t k_no_edge = UINT32_MAX;
  struct Edge {
    uint32_t child = 0;
    uint32_t sibling = k_no_edge; // the node's next edge
    unsigned char byte = 0;
  };
  struct Node {
    uint32_t first_edge = k_no_edge;
    uint32_t fail = 0;
    std::optional<size_t> best; // least id ending here or at any suffix (after build)
  };
  uint32_t child(uint32_t node, unsigned char byte) const; // 0 with no edge (root is 0)
  // Follow failure links from `node` until `byte` has an edge, as the automaton steps.
  uint32_t step(uint32_t node, unsigned char byte) const;
  std::vector<Node> m_nodes{Node{}};
  std::vector<Edge> m_edges;
};

} // namespace qpatch::util
