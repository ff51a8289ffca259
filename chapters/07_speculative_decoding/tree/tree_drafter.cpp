#include "tree_drafter.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "app/run_record.hpp"  // top_logits

namespace infer {

int TreeShape::guesses() const {
  int total = 0, width = 1;
  for (const int k : branching) total += (width *= k);
  return total;
}

std::string TreeShape::name() const { return fmt::format("{}", fmt::join(branching, "×")); }

TreeShape parse_tree_shape(const std::string& text) {
  TreeShape shape;
  const auto bad = [&] {
    return std::invalid_argument(fmt::format("tree shape '{}': write the children per depth as 1…8, e.g. 3x1x1x1", text));
  };
  for (std::size_t start = 0; start <= text.size();) {
    const std::size_t end = std::min(text.find('x', start), text.size());
    if (end != start + 1 || text[start] < '1' || text[start] > '8') throw bad();
    shape.branching.push_back(text[start] - '0');
    start = end + 1;
  }
  if (shape.guesses() > kMaxTreeGuesses)
    throw std::invalid_argument(fmt::format("tree shape '{}': {} guesses, at most {} (16 positions per target pass)", text,
                                            shape.guesses(), kMaxTreeGuesses));
  return shape;
}

Tensor forward_tree(const Llama& model, const TokenTree& tree, int first, int count, int64_t base, TreeKvCache& cache) {
  const LlamaConfig& c = model.config();
  std::vector<int32_t> tokens, positions;
  for (int j = first; j < first + count; ++j) {
    tokens.push_back(tree.token(j));
    positions.push_back(static_cast<int32_t>(base + tree.depth(j)));  // by depth: siblings share a position
  }
  cache.set_tree(&tree, base);
  Tensor x({count, c.d_model}, DType::f32, model.device());  // Llama::forward's steps, with our positions
  model.weights().embed(tokens, x);
  Llama::Activations a(c, count, model.device());
  for (int l = 0; l < c.n_layers; ++l) model.layer(l, x, a, positions, cache, base + first);  // slots base + first …
  return model.logits(x);
}

TreeDrafter::TreeDrafter(std::string name, Llama model, int64_t capacity, TreeShape shape)
    : name_(std::move(name)), model_(std::move(model)), shape_(std::move(shape)), cache_(model_.config(), capacity) {
  if (!model_.device().is_cpu()) throw std::invalid_argument("TreeDrafter: tree drafting runs on the CPU only");
}

TokenTree TreeDrafter::propose(std::span<const int32_t> context, int max_depth) {
  TokenTree tree(context.back());
  const int depth = std::min(max_depth, shape_.depth());
  if (depth <= 0) return tree;
  // Pass 0, as ModelDrafter: roll back to what the cache shares with `context` (the last token
  // is always fed again), then feed the rest causally. Its last row follows the root.
  int64_t keep = 0;
  while (keep < std::ssize(fed_) && keep + 1 < std::ssize(context) && fed_[keep] == context[keep]) ++keep;
  fed_.assign(context.begin(), context.end());
  cache_.truncate(keep);
  cache_.set_tree(nullptr, 0);
  const int64_t base = std::ssize(context) - 1;  // the root's slot
  Tensor logits = model_.forward(context.subspan(static_cast<std::size_t>(keep)), keep, cache_).to(Device::cpu());
  int level_first = 0, level_count = 1;  // the nodes of the depth just fed: the root
  for (int d = 0; d < depth; ++d) {
    // Children of every node of depth d: the draft's top-k after its sequence.
    const int64_t V = logits.dim(1);
    const int next_first = tree.size();
    for (int i = 0; i < level_count; ++i) {
      const std::span<const float> row(logits.host<float>() + i * V, static_cast<std::size_t>(V));
      for (const auto& [token, logit] : top_logits(row, shape_.branching[static_cast<std::size_t>(d)]))  // ties: lower id
        tree.add(token, level_first + i);
    }
    level_first = next_first;
    level_count = tree.size() - next_first;
    // Pass d + 1: the new nodes together, each through the tree mask (the deepest need no pass).
    if (d + 1 < depth) logits = forward_tree(model_, tree, level_first, level_count, base, cache_);
  }
  cache_.truncate(base + 1);  // forget the tree: the next context says which of it stood
  cache_.set_tree(nullptr, 0);
  return tree;
}

}  // namespace infer
