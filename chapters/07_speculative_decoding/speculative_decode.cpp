#include "speculative_decode.hpp"

#include <algorithm>
#include <stdexcept>

#include "measure/timing.hpp"

namespace infer {

RoundOutcome accept_draft(std::span<const std::vector<float>> p, const Draft& draft, Sampler& sampler) {
  const int gamma = std::ssize(draft.tokens);
  if (std::ssize(p) != gamma + 1) throw std::invalid_argument("accept_draft: need one target distribution per guess, plus one");
  for (int i = 0; i < gamma; ++i) {
    const int32_t x = draft.tokens[i];
    const float p_x = p[i][x], q_x = draft.q_of(i);
    // Keep the guess with probability min(1, p(x)/q(x)): always when the target likes it at
    // least as much as the draft did.
    if (p_x >= q_x || sampler.uniform() < static_cast<double>(p_x) / q_x) continue;
    // Rejected: draw from the residual max(0, p − q), where the target has mass the draft lacked.
    std::vector<float> residual(p[i].size());
    double total = 0;
    for (int64_t v = 0; v < std::ssize(residual); ++v) {
      const float q_v = draft.q.empty() || draft.q[i].empty() ? (v == x ? 1.0f : 0.0f) : draft.q[i][v];
      residual[v] = std::max(0.0f, p[i][v] - q_v);
      total += residual[v];
    }
    // The residual is empty only when p ≤ q everywhere, i.e. p = q up to float rounding (both
    // sum to 1): then P(reject) = Σ max(0, p − q) is 0 in exact arithmetic and the rejection came
    // from rounding. Draw from p itself, what the output at this position must follow anyway,
    // rather than divide by zero.
    if (!(total > 0)) return {i, sampler.draw(p[i]), false};
    for (float& r : residual) r /= total;
    return {i, sampler.draw(residual), false};
  }
  return {gamma, sampler.draw(p[gamma]), true};  // every guess kept: a bonus token
}

// the-change: begin generate_speculative
SpeculativeGeneration generate_speculative(Llama& target, KvCache& cache, Drafter& drafter, const Tokenizer& tokenizer,
                                           const std::vector<int32_t>& prompt, Sampler& sampler,
                                           const SpeculativeOptions& o, const OnSpeculativeToken& on_token) {
  SpeculativeGeneration gen;
  SpeculativeStats& stats = gen.stats;
  stats.checked_at.assign(o.gamma, 0);
  stats.accepted_at.assign(o.gamma, 0);
  std::vector<int32_t> seq = prompt;  // invariant: the target's cache holds every token of seq but the last
  // Appends one token; true when generation is over.
  auto emit = [&](int32_t token, std::span<const float> logits, TokenSource source, double seconds) {
    seq.push_back(token);
    gen.steps.push_back({token, top_logits(logits, o.top_logits), seconds});
    gen.sources.push_back(source);
    if (on_token) on_token(gen.steps.back(), source);
    return std::ssize(gen.steps) >= o.n_predict || (o.stop_at_end && tokenizer.ends_generation(token));
  };
  Stopwatch total, clock;

  // Prefill, exactly as chapter 02: the prompt in one pass, the first token from its last row.
  const Tensor first = target.forward(prompt, 0, cache).to(Device::cpu());
  const std::span<const float> first_row(first.host<float>(), first.numel());
  stats.prefill_seconds = clock.seconds();
  bool done = o.n_predict <= 0 || emit(sampler.sample(first_row), first_row, TokenSource::target, stats.prefill_seconds);

  while (!done) {
    // 1. Draft: up to γ guesses, never more than the tokens still wanted after this round's own.
    clock.restart();
    const int gamma = std::min<int64_t>(o.gamma, o.n_predict - std::ssize(gen.steps) - 1);
    const Draft draft = drafter.propose(seq, gamma);
    stats.draft_seconds += clock.seconds();

    // 2. Verify: ONE target pass over the last token and the guesses. Row i of the logits is the
    //    target's next-token distribution after seq + d1 … di, for i = 0 … γ'; the repetition
    //    penalty of row i counts d1 … di as seen, as a plain run that had emitted them would.
    clock.restart();
    std::vector<int32_t> feed = {seq.back()};
    feed.insert(feed.end(), draft.tokens.begin(), draft.tokens.end());
    const int64_t pos0 = std::ssize(seq) - 1;
    const Tensor logits = target.forward(feed, pos0, cache, /*all_logits=*/true).to(Device::cpu());
    const int64_t V = logits.dim(1);
    auto row = [&](int64_t i) { return std::span<const float>(logits.host<float>() + i * V, V); };
    std::vector<std::vector<float>> p;
    for (int i = 0; i < std::ssize(feed); ++i)
      p.push_back(sampler.distribution_after(row(i), std::span(draft.tokens).first(i)));

    // 3. Accept: the guesses the rule keeps, then one token of the target's.
    const RoundOutcome r = accept_draft(p, draft, sampler);
    const double verify_seconds = clock.seconds();
    stats.verify_seconds += verify_seconds;
    const double per_token = verify_seconds / (r.accepted + 1);
    const int64_t before = std::ssize(gen.steps);
    for (int i = 0; i < r.accepted && !done; ++i) done = emit(draft.tokens[i], row(i), TokenSource::drafted, per_token);
    if (!done) done = emit(r.next, row(r.accepted), TokenSource::target, per_token);
    const int64_t emitted = std::ssize(gen.steps) - before;
    stats.round_tokens += emitted;
    gen.rounds.push_back({draft.tokens, r.accepted, r.next, r.bonus, static_cast<int>(emitted)});
    // The round's tokens join the sampler's recent tokens, the penalty's history, as sample()
    // would have added them one at a time.
    sampler.accept(std::span(seq).last(static_cast<std::size_t>(emitted)));

    // 4. Roll back: the cache slots after the last kept token hold rejected guesses; forget them
    //    (nothing is copied — the next pass writes over them).
    cache.truncate(std::ssize(seq) - 1);

    ++stats.rounds;
    stats.guessing_rounds += draft.tokens.empty() ? 0 : 1;
    stats.drafted += std::ssize(draft.tokens);
    stats.accepted += r.accepted;
    for (int i = 0; i < std::ssize(draft.tokens) && i <= r.accepted; ++i) {
      ++stats.checked_at[i];
      if (i < r.accepted) ++stats.accepted_at[i];
    }
  }
  stats.total_seconds = total.seconds();
  return gen;
}
// the-change: end generate_speculative

double SpeculativeStats::alpha() const {
  int64_t checked = 0;
  for (int64_t c : checked_at) checked += c;
  return checked > 0 ? static_cast<double>(accepted) / checked : 0;
}

double SpeculativeStats::alpha_at(std::size_t i) const {
  return i < checked_at.size() && checked_at[i] > 0
             ? static_cast<double>(accepted_at[i]) / checked_at[i] : 0;
}

double SpeculativeStats::tokens_per_round() const {
  return rounds > 0 ? static_cast<double>(round_tokens) / rounds : 0;
}

}  // namespace infer
