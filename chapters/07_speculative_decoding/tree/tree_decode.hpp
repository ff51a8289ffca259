// Chapter 07, part 2, file 4: the round with a tree — draft a tree, verify every
// branch in one target pass, keep the longest branch the target agrees with.
//
//   round:  tree     = drafter.propose(sequence, depth)       depth draft passes
//           logits   = target(all tree nodes), tree mask       ONE target pass, row j after node j's sequence
//           walk from the root: while a child of the current node carries the target's argmax
//           at the node, step into it; the path walked, then the target's argmax at its end
//           cache.keep_path(path): the accepted rows move next to the text, the rest is forgotten
//
// Greedy only. Each step of the walk is the linear rule's test (is the guess the target's
// argmax?), and the children of a node carry distinct tokens, so at most one matches: the walk
// is the target's own greedy sequence for as long as the tree holds it, and the output is
// chapter 03's token for token. (Sampling needs SpecInfer's multi-candidate rule, the exercise
// 07_acceptance_rule; this mode refuses --temp > 0.)
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "app/run_record.hpp"
#include "model/llama.hpp"
#include "speculative_decode.hpp"  // TokenSource
#include "token_tree.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tree_drafter.hpp"
#include "tree_kv_cache.hpp"

namespace infer {

// What greedy verification of a tree decided: the accepted path (node indices, the root first)
// and the target's own token after it.
struct TreeOutcome {
  std::vector<int> path;
  int32_t next = 0;
};
// argmax[j]: the target's greedy token after node j's sequence.
TreeOutcome accept_tree(const TokenTree& tree, std::span<const int32_t> argmax);

struct TreeStats {
  int64_t rounds = 0;         // target passes after the prefill
  int64_t guesses = 0;        // tree nodes below the root, over all rounds
  int64_t accepted = 0;       // guesses kept
  int64_t round_tokens = 0;   // tokens the rounds produced (kept guesses + the target's own)
  double prefill_seconds = 0, draft_seconds = 0, verify_seconds = 0, total_seconds = 0;
  double tokens_per_pass() const { return rounds ? static_cast<double>(round_tokens) / static_cast<double>(rounds) : 0; }
  double accepted_per_pass() const { return rounds ? static_cast<double>(accepted) / static_cast<double>(rounds) : 0; }
};

struct TreeGeneration {
  std::vector<StepRecord> steps;     // one per generated token, as in chapters 01–03
  std::vector<TokenSource> sources;  // drafted (an accepted node) or target
  std::vector<int> accepted;         // per round: guesses kept (the path's length below the root)
  TreeStats stats;
};

struct TreeOptions {
  int n_predict = 32;
  bool stop_at_end = true;
  int top_logits = 5;
};

// Greedy generation after `prompt` with `cache` (empty, room for prompt + n_predict + the tree):
// the prefill as chapter 02, then tree rounds.
TreeGeneration generate_tree(const Llama& target, TreeKvCache& cache, TreeDrafter& drafter, const Tokenizer& tokenizer,
                             const std::vector<int32_t>& prompt, const TreeOptions& options);

}  // namespace infer
