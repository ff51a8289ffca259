// Exercise 07 — choose γ, the number of guesses per round, from the acceptance rate measured so far.
#pragma once

namespace exercise {

inline constexpr int kMaxGamma = 8;     // γ is chosen from 1 … kMaxGamma, or 0: no speculation
inline constexpr int kProbeEvery = 16;  // while not speculating, every 16th step is a γ = 1 round

// The γ in 1 … kMaxGamma with the largest predicted speed-up over plain decoding
//   S(α, γ) = E(α, γ) / (γ·c + 1),   E(α, γ) = 1 + α + α² + … + α^γ
// for a draft step that costs c target steps; the smallest such γ on a tie. 0 when no γ beats
// plain decoding (S ≤ 1 for every γ). Valid for every α in [0, 1] and c ≥ 0.
int best_gamma(double alpha, double draft_cost);

// What the rounds so far say about α, the chance that a checked guess is kept.
struct AcceptanceEstimate {
  double alpha = 0.5;    // the estimate next_gamma uses; before any round, a prior guess
  double checked = 0;    // for your bookkeeping: guesses checked so far (old ones fading)
  double kept = 0;       //                       of them, kept
  int plain_steps = 0;   //                       steps decoded without speculation, for probing
};

// Updates the estimate after a round that proposed `gamma` guesses and kept the first `accepted`
// (0 ≤ accepted ≤ gamma). Only the guesses up to the first rejection were checked: the ones after
// it say nothing about α. A round of gamma = 0 (a plain step) changes nothing. Old rounds must
// fade, so that the estimate follows a change of text within a couple of hundred rounds (after
// 2000 rounds keeping everything, 200 keeping nothing bring it below 0.25).
void record_round(AcceptanceEstimate& e, int gamma, int accepted);

// γ for the next step: best_gamma(e.alpha, c) — except that while that is 0, every kProbeEvery-th
// call returns 1 anyway, so that the estimate keeps hearing about α and speculation can resume
// when the text gets easier.
int next_gamma(AcceptanceEstimate& e, double draft_cost);

}  // namespace exercise
