// Stage 07, tree verification, against stage 03 and against linear speculation: greedy decoding
// with a tree of drafts (the draft's top-k at each depth, every branch verified in one target
// pass through the tree mask) must produce chapter 03's greedy tokens — and, since each node's
// query reads exactly its own sequence's rows through lib's attention kernel and a pass of at
// most 16 positions keeps each row's bits (ops::matmul_t), the same top-5 logits bit for bit.
// Also: a tree that is one chain is linear speculation (same tokens, same guesses kept per
// round); one pass over a tree gives at every node the logits of a plain forward of that node's
// root-to-node sequence; the ancestor mask and the greedy walk on hand-made trees.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "catch_compat.hpp"

#include "cached_generate.hpp"
#include "grouped_kv_cache.hpp"
#include "model_drafter.hpp"
#include "pack_model.hpp"
#include "speculative_decode.hpp"
#include "stage_prompts.hpp"
#include "test_support.hpp"
#include "tree_decode.hpp"

using namespace infer;
using infer::stage::kPrompts;

namespace {

constexpr int kTokens = 48;
constexpr int kCapacity = 128;

Llama q4_1_draft(const Llama& t) { return quant::packed_copy(t, quant::keep_reference(t), quant::PackedFormat::q4_1); }

Generation plain_greedy(LoadedModel& m, const std::vector<int32_t>& prompt) {
  GroupedKvCache cache(m.model.config(), kCapacity, m.model.device());
  Sampler greedy(SamplingParams{});
  return generate_cached(m.model, m.tokenizer, prompt, cache, greedy, {.n_predict = kTokens, .stop_at_end = false, .top_logits = 5});
}

TreeGeneration tree_greedy(LoadedModel& m, TreeDrafter& drafter, const std::vector<int32_t>& prompt) {
  TreeKvCache cache(m.model.config(), kCapacity);
  return generate_tree(m.model, cache, drafter, m.tokenizer, prompt, {.n_predict = kTokens, .stop_at_end = false, .top_logits = 5});
}

}  // namespace

TEST_CASE("the ancestor mask and the greedy walk on a hand-made tree", "[stage][stage07]") {
  //        0 (root, 10)
  //       /   \.
  //    1 (11)  2 (12)
  //     |       |   \.
  //    3 (13)  4 (13) 5 (14)
  //             |
  //            6 (15)
  TokenTree tree(10);
  tree.add(11, 0);
  tree.add(12, 0);
  tree.add(13, 1);
  tree.add(13, 2);
  tree.add(14, 2);
  tree.add(15, 4);
  const std::vector<std::vector<bool>> mask = tree.ancestor_mask();
  const std::vector<std::vector<int>> visible = {{0}, {0, 1}, {0, 2}, {0, 1, 3}, {0, 2, 4}, {0, 2, 5}, {0, 2, 4, 6}};
  for (int i = 0; i < tree.size(); ++i)
    for (int j = 0; j < tree.size(); ++j) {
      INFO("node " << i << " sees node " << j);
      CHECK(mask[i][j] == (std::ranges::find(visible[i], j) != visible[i].end()));
    }
  CHECK(tree.depth(6) == 3);
  CHECK(tree.path_to(6) == std::vector<int>{0, 2, 4, 6});
  // The target wants 12 after the root, 13 after node 2, 15 after node 4, 99 after node 6:
  // the walk takes 2, 4 (not 3, which carries 13 under a rejected parent), 6, then 99.
  std::vector<int32_t> wanted = {12, 0, 13, 0, 15, 0, 99};
  TreeOutcome r = accept_tree(tree, wanted);
  CHECK(r.path == std::vector<int>{0, 2, 4, 6});
  CHECK(r.next == 99);
  wanted = {7, 0, 0, 0, 0, 0, 0};  // nothing matches: the target's own token after the root
  r = accept_tree(tree, wanted);
  CHECK(r.path == std::vector<int>{0});
  CHECK(r.next == 7);
  CHECK(parse_tree_shape("2x2x1x1").guesses() == 14);
  CHECK(parse_tree_shape("3x1x1x1").name() == "3×1×1×1");
  CHECK_THROWS(parse_tree_shape("4x2x2"));  // 4 + 8 + 16 guesses
  CHECK_THROWS(parse_tree_shape("3x"));
}

TEST_CASE("one pass over a tree gives each node the logits of a plain forward of its own sequence", "[stage][stage07]") {
  REQUIRE_MODEL(m);
  const Llama& t = m->model;
  const std::vector<int32_t> context = m->tokenizer.encode(kPrompts[0]);
  TreeDrafter drafter("first 8 layers", first_layers(t, 8), kCapacity, parse_tree_shape("3x2x1"));  // 3 + 6 + 6 = 15 guesses
  const TokenTree tree = drafter.propose(context, 3);
  REQUIRE(tree.size() == 16);
  const auto base = std::ssize(context) - 1;  // the root, context.back(), at its slot

  TreeKvCache cache(t.config(), kCapacity);
  t.forward(std::span(context).first(static_cast<std::size_t>(base)), 0, cache);
  const Tensor logits = forward_tree(t, tree, 0, tree.size(), base, cache);
  const int64_t V = logits.dim(1);

  // Each node alone: chapter 03's cache with the text before the root, then the node's sequence.
  GroupedKvCache plain(t.config(), kCapacity);
  t.forward(std::span(context).first(static_cast<std::size_t>(base)), 0, plain);
  double worst = 0;
  for (int j = 0; j < tree.size(); ++j) {
    std::vector<int32_t> seq;
    for (const int a : tree.path_to(j)) seq.push_back(tree.token(a));
    plain.truncate(base);
    const Tensor alone = t.forward(seq, base, plain);  // the logits after its last token
    float largest = 0, diff = 0;
    for (int64_t v = 0; v < V; ++v) {
      largest = std::max(largest, std::abs(alone.host<float>()[v]));
      diff = std::max(diff, std::abs(alone.host<float>()[v] - logits.host<float>()[j * V + v]));
    }
    INFO("node " << j << " at depth " << tree.depth(j) << ": largest |logit| " << largest << ", difference " << diff);
    CHECK(diff <= 1e-4f * largest);  // the stated tolerance: fp32 round-off of a different summation order
    CHECK(diff == 0.0f);              // what lib's kernels actually give: the same bits (≤ 16 rows, same attention kernel)
    worst = std::max(worst, static_cast<double>(diff));
  }
  WARN("largest logit difference between a tree node and its sequence alone: " << worst);
}

TEST_CASE("greedy tree decoding gives chapter 03's tokens and logits, for several tree shapes", "[stage][stage07]") {
  REQUIRE_MODEL(m);
  const Llama& t = m->model;
  const Llama q4_1 = q4_1_draft(t);
  struct Case {
    const char* draft;
    const char* shape;
  };
  for (const Case c : {Case{"Q4_1", "3x1x1x1"}, Case{"Q4_1", "2x2x1x1"}, Case{"first 8 layers", "5x2"}}) {
    const Llama& base_model = std::string(c.draft) == "Q4_1" ? q4_1 : t;
    const int layers = std::string(c.draft) == "Q4_1" ? t.config().n_layers : 8;
    TreeDrafter drafter(c.draft, first_layers(base_model, layers), kCapacity, parse_tree_shape(c.shape));
    for (std::size_t p = 0; p < 3; ++p) {
      INFO("draft " << c.draft << ", shape " << c.shape << ", prompt: " << kPrompts[p]);
      const std::vector<int32_t> prompt = m->tokenizer.encode(kPrompts[p]);
      const Generation plain = plain_greedy(*m, prompt);
      const TreeGeneration tree = tree_greedy(*m, drafter, prompt);
      REQUIRE(tree.steps.size() == plain.steps.size());
      for (std::size_t s = 0; s < tree.steps.size(); ++s) {
        INFO("step " << s);
        REQUIRE(tree.steps[s].token == plain.steps[s].token);
        REQUIRE(tree.steps[s].top == plain.steps[s].top);  // ids and logits, bit for bit
      }
      const TreeStats& st = tree.stats;
      CHECK(st.round_tokens + 1 == std::ssize(tree.steps));  // every token from a round or the prefill
      CHECK(std::ssize(tree.accepted) == st.rounds);
      CHECK(st.accepted == std::ranges::count(tree.sources, TokenSource::drafted));
    }
  }
}

TEST_CASE("a tree that is one chain is linear speculation: the same tokens and guesses kept per round", "[stage][stage07]") {
  REQUIRE_MODEL(m);
  const Llama& t = m->model;
  ModelDrafter linear("Q4_1", q4_1_draft(t), kCapacity, SamplingParams{});
  TreeDrafter chain("Q4_1", first_layers(linear.model(), t.config().n_layers), kCapacity, parse_tree_shape("1x1x1x1"));
  for (std::size_t p : {1, 3, 4}) {
    INFO("prompt: " << kPrompts[p]);
    const std::vector<int32_t> prompt = m->tokenizer.encode(kPrompts[p]);
    GroupedKvCache cache(t.config(), kCapacity);
    Sampler greedy(SamplingParams{});
    const SpeculativeGeneration spec = generate_speculative(
        m->model, cache, linear, m->tokenizer, prompt, greedy, {.gamma = 4, .n_predict = kTokens, .stop_at_end = false, .top_logits = 5});
    const TreeGeneration tree = tree_greedy(*m, chain, prompt);
    REQUIRE(tree.steps.size() == spec.steps.size());
    for (std::size_t s = 0; s < tree.steps.size(); ++s) {
      REQUIRE(tree.steps[s].token == spec.steps[s].token);
      REQUIRE(tree.steps[s].top == spec.steps[s].top);
      CHECK(tree.sources[s] == spec.sources[s]);
    }
    REQUIRE(tree.accepted.size() == spec.rounds.size());
    for (std::size_t r = 0; r < spec.rounds.size(); ++r) CHECK(tree.accepted[r] == spec.rounds[r].accepted);
    CHECK(tree.stats.accepted < 4 * tree.stats.rounds);  // the draft was wrong sometimes: rejections were compacted away
  }
}
