#include "tree_decode.hpp"

#include "measure/timing.hpp"
#include "sampling/sampler.hpp"

namespace infer {

// the-change: begin accept_tree
TreeOutcome accept_tree(const TokenTree& tree, std::span<const int32_t> argmax) {
  TreeOutcome r{{0}, argmax[0]};
  for (bool stepped = true; stepped;) {
    stepped = false;
    for (const int child : tree.children(r.path.back()))
      if (tree.token(child) == r.next) {  // the guess is what the target wants after the node
        r.path.push_back(child);
        r.next = argmax[static_cast<std::size_t>(child)];
        stepped = true;
        break;
      }
  }
  return r;
}
// the-change: end accept_tree

// the-change: begin generate_tree
TreeGeneration generate_tree(const Llama& target, TreeKvCache& cache, TreeDrafter& drafter, const Tokenizer& tokenizer,
                             const std::vector<int32_t>& prompt, const TreeOptions& o) {
  TreeGeneration gen;
  TreeStats& stats = gen.stats;
  std::vector<int32_t> seq = prompt;  // invariant: the cache holds every token of seq but the last
  auto emit = [&](int32_t token, std::span<const float> logits, TokenSource source, double seconds) {
    seq.push_back(token);
    gen.steps.push_back({token, top_logits(logits, o.top_logits), seconds});
    gen.sources.push_back(source);
    return std::ssize(gen.steps) >= o.n_predict || (o.stop_at_end && tokenizer.ends_generation(token));
  };
  Stopwatch total, clock;

  cache.set_tree(nullptr, 0);
  const Tensor first = target.forward(prompt, 0, cache).to(Device::cpu());
  const std::span<const float> first_row(first.host<float>(), static_cast<std::size_t>(first.numel()));
  stats.prefill_seconds = clock.seconds();
  bool done = o.n_predict <= 0 || emit(argmax(first_row), first_row, TokenSource::target, stats.prefill_seconds);

  while (!done) {
    // 1. Draft a tree, no deeper than the tokens still wanted after this round's own.
    clock.restart();
    const TokenTree tree = drafter.propose(seq, static_cast<int>(o.n_predict - std::ssize(gen.steps) - 1));
    stats.draft_seconds += clock.seconds();

    // 2. Verify: ONE target pass over every node; row j follows node j's own draft sequence.
    clock.restart();
    const int64_t base = std::ssize(seq) - 1;  // the root (the last token) at its slot, as a linear round feeds it
    const Tensor logits = forward_tree(target, tree, 0, tree.size(), base, cache).to(Device::cpu());
    const int64_t V = logits.dim(1);
    auto row = [&](int j) { return std::span<const float>(logits.host<float>() + j * V, static_cast<std::size_t>(V)); };
    std::vector<int32_t> wanted;
    for (int j = 0; j < tree.size(); ++j) wanted.push_back(argmax(row(j)));

    // 3. Accept the longest branch the target agrees with, then its own token.
    const TreeOutcome r = accept_tree(tree, wanted);
    // 4. Compact: the accepted nodes' rows move next to the text, the other branches are forgotten.
    cache.keep_path(r.path);
    const double verify_seconds = clock.seconds();
    stats.verify_seconds += verify_seconds;
    const auto kept = static_cast<int>(r.path.size()) - 1;
    const double per_token = verify_seconds / (kept + 1);
    const int64_t before = std::ssize(gen.steps);
    for (int i = 1; i <= kept && !done; ++i)
      done = emit(tree.token(r.path[static_cast<std::size_t>(i)]), row(r.path[static_cast<std::size_t>(i) - 1]),
                  TokenSource::drafted, per_token);
    if (!done) done = emit(r.next, row(r.path.back()), TokenSource::target, per_token);
    // A round that ended early on an end token leaves the cache one row past seq: trim it.
    if (cache.length() > std::ssize(seq) - 1) cache.truncate(std::ssize(seq) - 1);

    ++stats.rounds;
    stats.guesses += tree.size() - 1;
    stats.accepted += kept;
    stats.round_tokens += std::ssize(gen.steps) - before;
    gen.accepted.push_back(kept);
  }
  stats.total_seconds = total.seconds();
  return gen;
}
// the-change: end generate_tree

}  // namespace infer
