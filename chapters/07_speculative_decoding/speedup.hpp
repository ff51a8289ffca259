// Chapter 07's layer, part 6: what speculation buys — the course's formula, and the numbers
// that go into it, measured.
//
// If each guess is accepted with probability α, independently, a round of γ guesses yields on
// average
//
//   E(α, γ) = 1 + α + α² + … + α^γ = (1 − α^(γ+1)) / (1 − α)      tokens per verification pass
//
// (the accepted run of guesses, plus the target's own token that ends every round). A round
// costs γ draft steps at a fraction c of a target step each, plus one verification pass that
// costs v(γ) target steps (the course assumes v = 1), so the speed-up over plain decoding is
//
//   S(α, γ, c) = E(α, γ) / (γ·c + v(γ)).
//
// α comes from real speculative runs (SpeculativeStats); c and v are measured against the
// target's decode step (measure_costs), and the speed-up itself from whole generations
// (time_configs). Every timing is a median over `repeats` rounds in which the configurations
// run in turn, so that whatever else the machine does slows them alike.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "app/cli.hpp"
#include "drafter.hpp"
#include "speculative_decode.hpp"

namespace infer::spec {

// γ may be fractional: a mean number of guesses per round.
double expected_tokens(double alpha, double gamma);
double predicted_speedup(double alpha, double gamma, double c, double verify_cost = 1.0);

// What the formula needs besides α, at one context length: the target's decode step, its
// verification pass over γ+1 positions (all of their logits) for γ = 0 … max_gamma, and each
// drafter's cost per guess — both as multiples of the decode step.
struct MeasuredCosts {
  int64_t context = 0;
  double decode_seconds = 0;
  std::vector<double> verify;  // [γ]: verification pass ÷ decode step (verify[0] = 1 by definition)
  std::vector<double> c;       // [i]: drafters[i]'s seconds per guess ÷ decode step
  double verify_at(double gamma) const;  // linear between the measured γ
};
// Every pass and every drafter (`gamma` guesses continuing `context`) runs once per round, in
// turn (medians_in_turn): c and v are ratios, and both sides of a ratio must see the same machine.
MeasuredCosts measure_costs(Llama& target, std::span<const int32_t> context, int max_gamma,
                            std::span<Drafter* const> drafters, int gamma, int repeats);

// One configuration to time: drafter == nullptr is plain decoding with chapter 03's cache.
struct Config {
  Drafter* drafter = nullptr;
  int gamma = 0;
};
struct Timed {
  double seconds = 0;              // median wall time of the whole generation, prefill included
  std::vector<int32_t> tokens;     // of the last repeat
  SpeculativeStats stats;          // of the last repeat (zero for plain decoding)
  double tokens_per_second() const { return seconds > 0 ? static_cast<double>(tokens.size()) / seconds : 0; }
};
std::vector<Timed> time_configs(LoadedModel& m, std::span<const Config> configs, const std::vector<int32_t>& prompt,
                                int n_predict, const SamplingParams& sampling, int repeats, const std::string& label);

// The speed-up the formula predicts for a run with these statistics: E(α, γ̄) / (γ̄·c + v(γ̄)),
// with γ̄ the guesses per guessing round. A drafter that sometimes has no guess (prompt lookup
// without a match) runs a fraction 1 − f of its rounds as plain decode steps (1 token, cost 1):
//   S = [(1 − f) + f·E(α, γ̄)] / [(1 − f) + f·(γ̄·c + v(γ̄))],   which is the formula when f = 1.
double predicted_for(const SpeculativeStats& stats, double c, const MeasuredCosts& costs);

}  // namespace infer::spec
