#include "tokenizer/bpe.hpp"

#include <queue>
#include <stdexcept>

#include "tokenizer/utf8.hpp"

namespace infer {

BpeMerges::BpeMerges(const std::vector<std::string>& merges) {
  rank_of_.reserve(merges.size());
  for (std::size_t r = 0; r < merges.size(); ++r) {
    // Split at the first space after the first character, as llama.cpp does.
    if (merges[r].find(' ', 1) == std::string::npos) {
      throw std::runtime_error("tokenizer.ggml.merges[" + std::to_string(r) + "] = '" +
                               merges[r] + "' is not of the form 'left right'");
    }
    // A repeated merge keeps its first (lowest) rank.
    rank_of_.emplace(merges[r], static_cast<int32_t>(r));
  }
}

int32_t BpeMerges::rank(std::string_view left, std::string_view right,
                        std::string& scratch) const {
  scratch.assign(left).append(1, ' ').append(right);
  const auto it = rank_of_.find(scratch);
  return it == rank_of_.end() ? -1 : it->second;
}

namespace {

// One symbol of the word being merged: a byte range of the word, linked to its live neighbours.
// A symbol merged into its left neighbour keeps its slot with length 0.
struct Symbol {
  std::size_t start;
  std::size_t length;
  int prev;  // index of the previous live symbol, -1 at the start
  int next;  // index of the next live symbol, -1 at the end
};

// A candidate merge of two adjacent symbols. It records both lengths so that, once popped, we can
// tell whether it is stale: a symbol only ever grows (by absorbing its right neighbour), so if
// both symbols still have the recorded lengths, they are still the same two strings side by side.
struct Candidate {
  int32_t rank;
  int left;
  int right;
  std::size_t left_length;
  std::size_t right_length;
};

// std::priority_queue pops the "largest" element, so "larger" means lower rank, then further left.
struct LowerRankFirst {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

std::vector<std::string_view> BpeMerges::apply(std::string_view word) const {
  // Start from the characters of the word.
  std::vector<Symbol> symbols;
  for (std::size_t pos = 0; pos < word.size();) {
    const std::size_t length = utf8::next(word, pos).length;
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({pos, length, index - 1, -1});
    if (index > 0) symbols[index - 1].next = index;
    pos += length;
  }

  const auto text = [&](int i) { return word.substr(symbols[i].start, symbols[i].length); };
  std::string scratch;
  std::priority_queue<Candidate, std::vector<Candidate>, LowerRankFirst> queue;
  const auto consider = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const int32_t r = rank(text(left), text(right), scratch);
    if (r >= 0) queue.push({r, left, right, symbols[left].length, symbols[right].length});
  };

  for (int i = 1; i < std::ssize(symbols); ++i) consider(i - 1, i);

  while (!queue.empty()) {
    const Candidate c = queue.top();
    queue.pop();
    Symbol& left = symbols[c.left];
    Symbol& right = symbols[c.right];
    if (left.length != c.left_length || right.length != c.right_length) continue;  // stale

    // Merge: the left symbol absorbs the right one, which leaves the list.
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = c.left;

    // The merged symbol forms new pairs with both its neighbours.
    consider(left.prev, c.left);
    consider(c.left, left.next);
  }

  std::vector<std::string_view> result;
  for (int i = symbols.empty() ? -1 : 0; i >= 0; i = symbols[i].next) result.push_back(text(i));
  return result;
}

}  // namespace infer
