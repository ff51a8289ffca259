// A model's quality on real text: the course's evaluation text and the two measures every
// chapter that changes the numbers (pooled heads, a shorter cache, rounded weights, a trained
// student) reports beside its own figures.
//
//   perplexity   exp(mean over positions of −log p(next token | the tokens before it)),
//                the model's average "surprise" on the text; lower is better
//   agreement    the fraction of positions where two models' most likely next token is the same;
//                1.0 means greedy decoding would not notice the difference at those positions
//
// The text is cut into consecutive windows of up to `window` tokens. Each window starts from an
// empty cache at position 0; its first token is context only, every later token is predicted,
// so a text of N tokens in W windows gives N − W predicted positions.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "model/kv_store.hpp"
#include "model/llama.hpp"

namespace infer {

// The course's evaluation text (data/fetch_eval_text.sh): Genesis–Ruth of the World English Bible.
std::string eval_text_path();  // INFER_DATA_DIR "/text/web.txt"
// The whole file; throws UsageError naming data/fetch_eval_text.sh when it is missing.
std::string read_eval_text();
// The held-out slice: the book of Ruth, everything after the line "Ruth" (see data/README.md).
std::string held_out_text(const std::string& eval_text);

struct EvalOptions {
  int64_t window = 512;         // tokens per window (each with a fresh cache)
  int64_t chunk = 128;          // tokens per forward call inside a window
  std::string progress_label;   // shown on the progress bar (empty: no bar)
};

struct TextEvaluation {
  int64_t windows = 0;
  std::vector<int64_t> positions;  // index in the token sequence of each predicted token
  std::vector<double> nll;         // −log p(token) in nats, per predicted position
  std::vector<int32_t> greedy;     // the model's most likely token at each predicted position
  double seconds = 0;

  int64_t count() const { return std::ssize(nll); }
  double mean_nll() const;    // nats per token
  double perplexity() const;  // exp(mean_nll)
  double greedy_accuracy(std::span<const int32_t> tokens) const;  // greedy == the actual next token
};

// Evaluates `model` on tokens (at least 2) through `cache`, which `clear` empties at the start
// of every window; it must hold a window (window_tokens) and accept options.chunk new positions
// per pass. Throws std::invalid_argument for fewer than 2 tokens or a window outside 2 … the
// model's context.
TextEvaluation evaluate_text(Llama& model, std::span<const int32_t> tokens, KvStore& cache,
                             const std::function<void()>& clear, const EvalOptions& options = {});

// The positions a window's cache needs for `n_tokens` tokens: min(window, n_tokens), after the
// checks evaluate_text makes.
int64_t window_tokens(const Llama& model, int64_t n_tokens, const EvalOptions& options);

// The same with a fresh cache of type Cache, a KvStore built as Cache(config, positions, device)
// whose clear() empties it: evaluate_text<GroupedKvCache>(model, tokens, options).
template <class Cache>
TextEvaluation evaluate_text(Llama& model, std::span<const int32_t> tokens, const EvalOptions& options = {}) {
  Cache cache(model.config(), window_tokens(model, std::ssize(tokens), options), model.device());
  return evaluate_text(model, tokens, cache, [&] { cache.clear(); }, options);
}

struct Agreement {
  int64_t positions = 0;
  int64_t agreeing = 0;
  double rate() const { return positions > 0 ? static_cast<double>(agreeing) / static_cast<double>(positions) : 0.0; }
};

// Greedy next-token agreement of two evaluations of the same tokens with the same windows.
// Throws std::invalid_argument when they do not cover the same positions.
Agreement greedy_agreement(const TextEvaluation& a, const TextEvaluation& b);

}  // namespace infer
