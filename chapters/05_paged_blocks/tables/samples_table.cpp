#include "samples_table.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "measure/table.hpp"
#include "paged_engine.hpp"

namespace infer::paging {
namespace {

struct SampleRun {
  std::vector<Request> samples;
  int blocks_after_prompt = 0, peak_blocks = 0;
  PagedStats stats;
};

SampleRun run_samples(const Context& cx, const std::vector<int32_t>& prompt, bool fork) {
  SamplingParams sampling = cx.o.sampling;
  sampling.temperature = cx.s.sample_temp;
  PagedEngineOptions po;
  po.block_size = cx.s.block_size;
  po.prefix_caching = false;  // sharing here comes from fork alone
  const int64_t blocks_per_sample = (std::ssize(prompt) + cx.s.sample_tokens) / po.block_size + 2;
  po.budget_bytes = (cx.s.samples + 1) * blocks_per_sample * po.block_size * cx.bytes_per_token;
  PagedEngine engine(cx.m.model, sampling, po);
  SampleRun out;
  out.samples.resize(cx.s.samples);
  for (int i = 0; i < cx.s.samples; ++i) {
    Request& r = out.samples[i];
    r.id = i;
    r.prompt = prompt;
    r.max_new_tokens = cx.s.sample_tokens;
  }
  const auto step = [&](std::vector<Request*> batch) {
    const std::vector<int32_t> next = engine.step(batch);
    for (std::size_t i = 0; i < batch.size(); ++i) batch[i]->tokens.push_back(next[i]);
    out.peak_blocks = std::max(out.peak_blocks, engine.pool().used_blocks());
  };
  if (fork) {
    // The prompt once, then every other sample forked from it.
    engine.admit(out.samples[0], cx.s.sample_tokens);
    step({&out.samples[0]});
    for (int i = 1; i < cx.s.samples; ++i) engine.fork(out.samples[0], out.samples[i]);
  } else {
    for (Request& r : out.samples) engine.admit(r, cx.s.sample_tokens);
  }
  out.blocks_after_prompt = engine.pool().used_blocks();
  for (;;) {
    std::vector<Request*> running;
    for (Request& r : out.samples)
      if (!r.done()) running.push_back(&r);
    if (running.empty()) break;
    step(running);
  }
  for (const Request& r : out.samples) engine.release(r);
  out.stats = engine.stats();
  return out;
}

}  // namespace

void samples_table(const Context& cx) {
  const std::vector<int32_t> prompt = cx.m.tokenizer.encode(
      "Write a short poem about the sea, the wind and an old lighthouse keeper who waits for a ship:");
  const SampleRun forked = run_samples(cx, prompt, true);
  const SampleRun alone = run_samples(cx, prompt, false);
  const int same = same_tokens(forked.samples, alone.samples);

  Table t(fmt::format("4. {} samples of one {}-token prompt (temperature {:g}, {} tokens each, blocks of {}): forked vs independent",
                      cx.s.samples, prompt.size(), cx.s.sample_temp, cx.s.sample_tokens, cx.s.block_size),
          {"samples", "prompt tokens computed", "blocks after the prompt", "peak blocks", "blocks shared at fork",
           "copy-on-write copies", "tokens = independent"});
  const auto row = [&](const std::string& name, const SampleRun& r) {
    t.add_row({name, std::to_string(r.stats.prefill_tokens + r.stats.forks), std::to_string(r.blocks_after_prompt),
               std::to_string(r.peak_blocks), std::to_string(r.stats.shared_at_fork), std::to_string(r.stats.copies),
               &r == &alone ? "" : fmt::format("{} of {}", same, cx.s.samples)});
    cx.figures["samples"].push_back({{"mode", name}, {"prefill_tokens", r.stats.prefill_tokens + r.stats.forks},
                                     {"blocks_after_prompt", r.blocks_after_prompt}, {"peak_blocks", r.peak_blocks},
                                     {"shared_at_fork", r.stats.shared_at_fork}, {"copies", r.stats.copies}});
  };
  row("forked from one prefill", forked);
  row("independent requests", alone);
  t.add_note("Forked: the prompt is prefilled once; each other sample shares the blocks of its first P − 1 positions and recomputes "
             "the last prompt position itself, to draw its own first token. The prompt's last block is partly filled, so each "
             "sample's first write there copies it (copy-on-write); the full blocks stay shared to the end.");
  t.add_note("Each sample has its own sampler seeded with seed + its index, so forked and independent runs draw the same tokens.");
  cx.emit(t);
  for (const Request& r : forked.samples)
    fmt::print("sample {}: \"{}\"\n", r.id, cx.m.tokenizer.decode(r.tokens));
  fmt::print("\n");
}

}  // namespace infer::paging
