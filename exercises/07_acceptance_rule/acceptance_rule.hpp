// Exercise 07 — the acceptance rule of speculative sampling when the draft proposes several
// candidates for one position (SpecInfer's multi-step speculative sampling).
#pragma once

#include <functional>
#include <span>
#include <vector>

namespace exercise {

using Distribution = std::vector<double>;  // one probability per token of the vocabulary
using Uniform = std::function<double()>;   // each call: the next uniform draw in [0, 1)

// Given, not part of the exercise: the inverse CDF. The token at which the running sum of `dist`
// first exceeds u, for u in [0, 1) — a draw from `dist` when u is uniform.
inline int draw(std::span<const double> dist, double u) {
  double running = 0;
  int last = 0;  // rounding can leave the running sum a hair below u: fall back to the last token with mass
  for (std::size_t v = 0; v < dist.size(); ++v) {
    if (dist[v] <= 0) continue;
    running += dist[v];
    last = static_cast<int>(v);
    if (u < running) return last;
  }
  return last;
}

// The residual distribution of a rejection: max(0, p − q), normalised to sum to 1 — where the
// target has probability the draft lacked. When p ≤ q everywhere (p == q) there is no residual
// mass; return p itself (the rule never rejects then, but rounding might).
Distribution residual(const Distribution& p, const Distribution& q);

// How the draft chose its k candidates for the position.
enum class Candidates {
  independent,  // k independent draws from q (a token may come twice)
  distinct,     // one after another without replacement: candidate j from q with candidates
                // 0 … j−1 removed (their probability set to 0) and renormalised
};

// What the verification decided.
struct Verdict {
  int accepted = -1;  // the index in `candidates` of the one kept, or −1 when every one was rejected
  int token = 0;      // the token that follows: candidates[accepted], or a draw after all rejections
};

// Verifies k candidates for ONE position against the target's distribution p there, so that the
// token that comes out is distributed exactly as p (SpecInfer, Miao et al. 2024; the distinct
// case: Yang et al. 2024, "Multi-Candidate Speculative Decoding"):
//   target ← p, proposal ← q
//   for j = 0 … k−1, x = candidates[j]:
//       keep x with probability min(1, target(x) / proposal(x))          → {j, x}
//       otherwise: target ← residual(target, proposal)
//                  distinct candidates: proposal ← proposal without x, renormalised
//   every candidate rejected: token ← a draw from target                 → {−1, token}
// Every random decision uses `uniform` (and `draw` above), a fresh number each time.
Verdict verify_candidates(const Distribution& p, const Distribution& q, const std::vector<int>& candidates, Candidates how,
                          const Uniform& uniform);

}  // namespace exercise
