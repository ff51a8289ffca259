// Chapter 07's layer, part 2: speculative decoding — guess cheaply, verify in one pass.
//
// A decode step of chapter 02 reads every weight to produce one token. Checking γ guessed
// tokens costs one forward pass over γ+1 positions: the same weights read once, a little more
// arithmetic (a matrix with γ+1 rows instead of a vector). So when a cheap draft guesses well,
// one expensive pass yields several tokens:
//
//   round:  d1 … dγ  = drafter.propose(sequence, γ)                       γ cheap steps
//           p0 … pγ  = target(last token, d1 … dγ)                        ONE target pass
//           keep d1 … dk while the rule accepts them, then one token of the target's own
//
// The rule (Leviathan et al. 2023; Chen et al. 2023) keeps the output distribution exactly the
// target's. With draft distribution q and target distribution p at a position:
//   accept d with probability min(1, p(d) / q(d));
//   on rejection draw from the residual  r = max(0, p − q) / Σ max(0, p − q)   and stop;
//   after γ acceptances draw a bonus token from pγ.
// Why it is exact: P(output = x) = q(x)·min(1, p(x)/q(x)) + P(reject)·r(x)
//                                = min(q(x), p(x))       + max(0, p(x) − q(x))   = p(x),
// because P(reject) = 1 − Σ min(p, q) = Σ max(0, p − q), the residual's normaliser.
//
// Temperature, top-k, top-p and the repetition penalty are part of p and q: both are
// Sampler::distribution_after() of the logits under the same settings, so the rule reproduces
// the target's *sampled* distribution. The penalty looks at what came before, so row i of a
// round counts the guesses d1 … di as already seen, and the kept tokens join the history.
// Greedy decoding (temperature 0) is the special case of one-hot p and q: a guess is accepted
// exactly when it is the target's argmax, and on a mismatch the residual is the target's own
// token — the output is the target's greedy output, token for token.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "app/run_record.hpp"
#include "drafter.hpp"
#include "02_kv_cache/kv_cache.hpp"  // truncate: the roll-back
#include "model/llama.hpp"
#include "sampling/sampler.hpp"
#include "tokenizer/tokenizer.hpp"

namespace infer {

// What one round decided: the first `accepted` guesses stand, then `next` from the target.
struct RoundOutcome {
  int accepted = 0;
  int32_t next = 0;
  bool bonus = false;  // every guess accepted: `next` comes from the last row, pγ
};

// The acceptance rule. p: the target's γ'+1 distributions (p[i] follows the context and the
// guesses before d_{i+1}); draft: its γ' guesses with their q. Uniform draws come from `sampler`.
RoundOutcome accept_draft(std::span<const std::vector<float>> p, const Draft& draft, Sampler& sampler);

// Where a generated token came from: an accepted guess, or the target's own token (the
// correction after a rejection, or the bonus after full acceptance).
enum class TokenSource : uint8_t { drafted, target };

struct SpeculativeOptions {
  int gamma = 4;            // guesses per round
  int n_predict = 32;
  bool stop_at_end = true;  // stop at an end-of-generation token
  int top_logits = 5;       // top logits kept per StepRecord
};

// Counters of a run, for α (acceptance rate) and where the time went.
struct SpeculativeStats {
  int64_t rounds = 0;
  int64_t guessing_rounds = 0;        // rounds in which the drafter had any guess
  int64_t drafted = 0;                // guesses proposed
  int64_t accepted = 0;               // guesses kept
  int64_t round_tokens = 0;           // tokens the rounds produced (kept guesses + target's own)
  std::vector<int64_t> checked_at;    // [i]: rounds whose guess i+1 was checked (all before it kept)
  std::vector<int64_t> accepted_at;   // [i]: rounds whose guess i+1 was kept
  double prefill_seconds = 0, draft_seconds = 0, verify_seconds = 0, total_seconds = 0;
  // α: the chance a checked guess is kept (over every position of the guess).
  double alpha() const;
  double alpha_at(std::size_t i) const;
  double tokens_per_round() const;  // tokens per verification pass (the prefill's first excluded)
};

// One round as it happened: the counters above are sums over these (the report draws them).
struct RoundLog {
  std::vector<int32_t> guesses;  // d1 … dγ' as the drafter proposed them
  int accepted = 0;              // the first `accepted` stood
  int32_t next = 0;              // the target's own token: the correction, or the bonus
  bool bonus = false;
  int emitted = 0;               // tokens the round added (fewer at the end of generation)
};

struct SpeculativeGeneration {
  std::vector<StepRecord> steps;     // one per generated token, as in chapters 01–03
  std::vector<TokenSource> sources;  // one per generated token
  std::vector<RoundLog> rounds;      // one per draft-then-verify round
  SpeculativeStats stats;
};

using OnSpeculativeToken = std::function<void(const StepRecord&, TokenSource)>;

// Generates after `prompt` with `cache` (empty, room for prompt + n_predict tokens) for the
// target. The first token comes from the prefill as in chapter 02; every later one from rounds
// of draft-then-verify.
SpeculativeGeneration generate_speculative(Llama& target, KvCache& cache, Drafter& drafter, const Tokenizer& tokenizer,
                                           const std::vector<int32_t>& prompt, Sampler& sampler,
                                           const SpeculativeOptions& options, const OnSpeculativeToken& on_token = {});

}  // namespace infer
