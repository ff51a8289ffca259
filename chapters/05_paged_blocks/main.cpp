// ch05_paged_blocks — the K/V cache in fixed-size blocks: the memory it recovers, the sequences
// that then fit, the prefill a shared prefix saves, samples that share a prompt, block size.
//
//   ch05_paged_blocks                       everything below on the default model (~5 min on 2 idle cores)
//   ch05_paged_blocks --requests 64         chapter 04's whole workload (the real runs dominate)
//   ch05_paged_blocks --system-tokens 400 --prefix-requests 64
//   ch05_paged_blocks --csv t.csv --json r.json
//
// The tables, in the order printed:
//   1  chapter 04's workload: KV memory reserved vs written, contiguous and paged (8, 16, 32)
//   2  one fixed memory budget: how many sequences run at once, contiguous vs paged
//   3  a 200-token system prompt shared by 32 requests: prefill and memory, cold vs shared
//   4  4 samples of one prompt: forked (shared blocks, copy-on-write) vs independent
//   5  block size: waste against step time
#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>

#include <fmt/format.h>

#include "app/cli.hpp"
#include "app/run_record.hpp"
#include "app/table_context.hpp"
#include "04_batching/batch_decode.hpp"
#include "03_gqa/grouped_kv_cache.hpp"
#include "measure/bandwidth.hpp"
#include "measure/progress.hpp"
#include "measure/table.hpp"
#include "measure/timing.hpp"
#include "paged_engine.hpp"
#include "paged_scheduler.hpp"
#include "04_batching/simulate.hpp"
#include "tensor/ops.hpp"
#include "04_batching/workload.hpp"

using namespace infer;
using nlohmann::json;

namespace {

struct Settings {
  int requests = 32;
  int slots = 8;
  int block_size = kDefaultBlockSize;
  int max_len = 256;         // the server's cap on new tokens: what a contiguous cache must reserve
  double budget_mib = 0;     // table 2's budget; 0: the contiguous reservation of `slots` sequences
  int system_tokens = 200;
  int prefix_requests = 32;
  int prefix_new = 8;
  int samples = 4;
  int sample_tokens = 24;
  float sample_temp = 0.8f;
  int64_t cached = 128;      // table 5: cache length of each sequence in the timed step
  int repeats = 9;
  int budget_runs = 3;       // table 2: runs of each layout, in turn (the median time is reported)
};

struct Context : TableContext {
  const Settings& s;
  std::size_t bytes_per_token;  // K and V of one position, all layers
};

const std::vector<int> kBlockSizes = {8, 16, 32};

std::string mb(double bytes) { return fmt::format("{:.1f}", bytes / 1e6); }

int64_t total_new_tokens(const std::vector<Request>& requests) {
  return std::accumulate(requests.begin(), requests.end(), int64_t{0}, [](int64_t a, const Request& r) { return a + r.max_new_tokens; });
}

int same_tokens(const std::vector<Request>& a, const std::vector<Request>& b) {
  int same = 0;
  for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) same += a[i].tokens == b[i].tokens;
  return same;
}

// ---- a StepEngine wrapper that records memory after every step ----

// After each step: positions the batch's sequences have written, bytes the layout reserves,
// and what a contiguous cache reserved for the length cap would hold for the same sequences.
struct MemorySample {
  int64_t written = 0;
  double reserved = 0, capped = 0;
};

struct MemorySummary {
  double mean_reserved = 0, peak_reserved = 0, mean_written = 0, mean_capped = 0;
  double waste() const { return mean_reserved > 0 ? 1 - mean_written / mean_reserved : 0; }
  double capped_waste() const { return mean_capped > 0 ? 1 - mean_written / mean_capped : 0; }
};

class MeteredEngine : public MemoryBoundEngine {
 public:
  // `memory` is the engine's memory side (nullptr for chapter 04's, which never runs out);
  // `reserved` reads the bytes the layout holds now.
  MeteredEngine(const Context& cx, StepEngine& inner, MemoryBoundEngine* memory, std::function<double()> reserved, ProgressBar& bar)
      : cx_(cx), inner_(inner), memory_(memory), reserved_(std::move(reserved)), bar_(bar) {}
  void admit(const Request& r, int new_tokens) override { inner_.admit(r, new_tokens); }
  std::vector<int32_t> step(std::span<Request* const> batch) override {
    std::vector<int32_t> next = inner_.step(batch);
    MemorySample m;
    for (const Request* r : batch) {
      // The step stored the prompt and every token generated before this one.
      m.written += std::ssize(r->prompt) + std::ssize(r->tokens);
      m.capped += static_cast<double>(std::ssize(r->prompt) + cx_.s.max_len - 1);
    }
    m.capped *= static_cast<double>(cx_.bytes_per_token);
    m.reserved = reserved_();
    samples_.push_back(m);
    bar_.advance(std::ssize(batch));
    return next;
  }
  void release(const Request& r) override { inner_.release(r); }
  bool can_admit(const Request& r) const override { return memory_ == nullptr || memory_->can_admit(r); }
  bool reserve(const Request& r) override { return memory_ == nullptr || memory_->reserve(r); }
  bool fits_alone(const Request& r) const override { return memory_ == nullptr || memory_->fits_alone(r); }

  MemorySummary summary() const {
    MemorySummary s;
    if (samples_.empty()) return s;
    for (const MemorySample& m : samples_) {
      s.mean_reserved += m.reserved;
      s.mean_written += static_cast<double>(m.written) * static_cast<double>(cx_.bytes_per_token);
      s.mean_capped += m.capped;
      s.peak_reserved = std::max(s.peak_reserved, m.reserved);
    }
    const auto n = static_cast<double>(samples_.size());
    s.mean_reserved /= n;
    s.mean_written /= n;
    s.mean_capped /= n;
    return s;
  }

 private:
  const Context& cx_;
  StepEngine& inner_;
  MemoryBoundEngine* memory_;
  std::function<double()> reserved_;
  ProgressBar& bar_;
  std::vector<MemorySample> samples_;
};

// One real run of the workload and what it measured.
struct WorkloadRun {
  std::string layout;
  std::vector<Request> requests;
  std::vector<StepLog> steps;
  MemorySummary memory;
  double seconds = 0;
  int64_t preemptions = 0;
  int max_running = 0;
  int64_t tokens() const { return total_new_tokens(requests); }
};

WorkloadRun run_contiguous(const Context& cx, const std::vector<Request>& requests, int slots) {
  BatchDecoder decoder(cx.m.model, cx.o.sampling);
  ProgressBar bar(fmt::format("workload, contiguous caches, {} slots", slots), total_new_tokens(requests));
  MeteredEngine engine(cx, decoder, nullptr, [&] { return static_cast<double>(decoder.cache_bytes()); }, bar);
  WallClock clock;
  Stopwatch watch;
  PolicyRun run = serve(Policy::continuous, requests, slots, engine, clock);
  bar.done();
  int most = 0;
  for (const StepLog& s : run.steps) most = std::max(most, s.batch);
  return {"contiguous", std::move(run.requests), std::move(run.steps), engine.summary(), watch.seconds(), 0, most};
}

WorkloadRun run_paged(const Context& cx, const std::vector<Request>& requests, int slots, int block_size, std::size_t budget,
                      bool prefix_caching) {
  PagedEngineOptions po;
  po.block_size = block_size;
  po.budget_bytes = budget;
  po.prefix_caching = prefix_caching;
  PagedEngine paged(cx.m.model, cx.o.sampling, po);
  ProgressBar bar(fmt::format("workload, paged, blocks of {}", block_size), total_new_tokens(requests));
  MeteredEngine engine(
      cx, paged, &paged, [&] { return static_cast<double>(paged.pool().used_blocks()) * static_cast<double>(paged.pool().bytes_per_block()); },
      bar);
  WallClock clock;
  Stopwatch watch;
  PagedRun run = serve_paged(requests, slots, engine, clock);
  bar.done();
  if (paged.pool().free_blocks() != paged.pool().num_blocks()) throw std::logic_error("blocks left in the pool after the run");
  return {fmt::format("paged, blocks of {}", block_size), std::move(run.requests), std::move(run.steps), engine.summary(),
          watch.seconds(), run.preemptions, run.max_running};
}

// ---- table 1: reserved vs written on chapter 04's workload ----

struct WorkloadRuns {
  WorkloadRun contiguous;
  std::vector<WorkloadRun> paged;  // one per kBlockSizes
};

WorkloadRuns memory_table(const Context& cx, const std::vector<Request>& requests) {
  WorkloadRuns runs{run_contiguous(cx, requests, cx.s.slots), {}};
  for (int b : kBlockSizes) runs.paged.push_back(run_paged(cx, requests, cx.s.slots, b, std::size_t{1} << 30, false));

  const WorkloadRun& c = runs.contiguous;
  Table t(fmt::format("1. KV memory on chapter 04's workload, {} slots: reserved vs written, averaged over the steps ({})", cx.s.slots,
                      cx.machine_line),
          {"layout", "mean reserved (MB)", "peak reserved (MB)", "mean written (MB)", "waste", "run (s)", "steps",
           "tokens = contiguous run"});
  t.add_row({fmt::format("contiguous, reserved for prompt + the {}-token cap", cx.s.max_len), mb(c.memory.mean_capped), "",
             mb(c.memory.mean_written), cell::percent(c.memory.capped_waste()), "", "", ""});
  t.add_row({"contiguous, reserved for each request's own length (ch04)", mb(c.memory.mean_reserved), mb(c.memory.peak_reserved),
             mb(c.memory.mean_written), cell::percent(c.memory.waste()), cell::secs(c.seconds), std::to_string(c.steps.size()), ""});
  cx.figures["memory"].push_back({{"layout", "contiguous_cap"}, {"mean_reserved", c.memory.mean_capped},
                                  {"mean_written", c.memory.mean_written}, {"waste", c.memory.capped_waste()}});
  cx.figures["memory"].push_back({{"layout", "contiguous_own_length"}, {"mean_reserved", c.memory.mean_reserved},
                                  {"peak_reserved", c.memory.peak_reserved}, {"mean_written", c.memory.mean_written},
                                  {"waste", c.memory.waste()}, {"seconds", c.seconds}});
  for (const WorkloadRun& p : runs.paged) {
    const int same = same_tokens(p.requests, c.requests);
    t.add_row({p.layout, mb(p.memory.mean_reserved), mb(p.memory.peak_reserved), mb(p.memory.mean_written), cell::percent(p.memory.waste()),
               cell::secs(p.seconds), std::to_string(p.steps.size()), fmt::format("{} of {}", same, requests.size())});
    cx.figures["memory"].push_back({{"layout", p.layout}, {"mean_reserved", p.memory.mean_reserved},
                                    {"peak_reserved", p.memory.peak_reserved}, {"mean_written", p.memory.mean_written},
                                    {"waste", p.memory.waste()}, {"seconds", p.seconds}, {"identical_tokens", same}});
  }
  t.add_note(fmt::format("{} requests of chapter 04's workload (seeded log-normal lengths, capped at {}; {} new tokens in all), all "
                         "queued at time 0, continuous batching; {} of K and V per position.",
                         requests.size(), cx.s.max_len, total_new_tokens(requests), format_bytes(static_cast<double>(cx.bytes_per_token))));
  t.add_note("reserved: bytes the layout holds after each step (contiguous: the caches allocated; paged: blocks taken from the pool); "
             "written: positions the running sequences have stored × bytes per position; waste = 1 − written / reserved.");
  t.add_note(fmt::format("The first row is what a server must reserve when it cannot know an answer's length: prompt + {} − 1 "
                         "positions per running request (computed for the same steps). Chapter 04's BatchDecoder is told each "
                         "answer's length in advance, which no server is; it still reserves every position before it is written. "
                         "Paged runs: prefix caching off, so the gain is paging alone. The PagedAttention paper: 60–80% wasted in "
                         "contiguous systems, under 4% paged.",
                         cx.s.max_len));
  cx.emit(t);
  return runs;
}

// ---- table 2: one budget, how many sequences at once ----

// Table 2's budget: --budget-mib, or what `slots` contiguous reservations of the longest prompt
// plus the cap need. Checked before any run: it must hold at least one such sequence.
struct Budget {
  double bytes = 0, per_sequence = 0;
  int64_t positions = 0;  // of one contiguous reservation
  int contiguous_fit = 0;
};

Budget fixed_budget(const Context& cx, const std::vector<Request>& requests) {
  int64_t longest_prompt = 0;
  for (const Request& r : requests) longest_prompt = std::max(longest_prompt, std::ssize(r.prompt));
  Budget b;
  b.positions = longest_prompt + cx.s.max_len - 1;
  b.per_sequence = static_cast<double>(b.positions) * static_cast<double>(cx.bytes_per_token);
  b.bytes = cx.s.budget_mib > 0 ? cx.s.budget_mib * 1024 * 1024 : b.per_sequence * cx.s.slots;
  b.contiguous_fit = static_cast<int>(std::floor(b.bytes / b.per_sequence));
  if (b.contiguous_fit < 1)
    throw UsageError(fmt::format("--budget-mib {:g}: {} does not hold one sequence of {} positions ({})", cx.s.budget_mib,
                                 format_bytes(b.bytes), b.positions, format_bytes(b.per_sequence)));
  // The paged run must fit the same sequence in whole blocks.
  const int64_t block = cx.s.block_size;
  const double in_blocks = static_cast<double>((b.positions + block - 1) / block * block * cx.bytes_per_token);
  if (in_blocks > b.bytes)
    throw UsageError(fmt::format("--block-size {}: one sequence of {} positions takes {} in such blocks, more than table 2's "
                                 "budget of {}", cx.s.block_size, b.positions, format_bytes(in_blocks), format_bytes(b.bytes)));
  return b;
}

void budget_table(const Context& cx, const std::vector<Request>& requests, const Budget& b, const WorkloadRun& contiguous8) {
  const double budget = b.bytes;
  const int fit_contiguous = b.contiguous_fit;
  const int max_slots = static_cast<int>(requests.size());
  const auto budget_bytes = static_cast<std::size_t>(budget);
  // The two layouts run in turn, --budget-runs times each, and the table reports each one's median
  // time: a single run of either moves by ~10% on a shared machine, as much as the steps paging
  // saves. Every run of a layout makes the same steps and tokens (greedy), so the first one's are kept.
  WorkloadRun contiguous = fit_contiguous == cx.s.slots ? contiguous8 : run_contiguous(cx, requests, fit_contiguous);
  WorkloadRun paged = run_paged(cx, requests, max_slots, cx.s.block_size, budget_bytes, true);
  std::vector<double> contiguous_seconds{contiguous.seconds}, paged_seconds{paged.seconds};
  for (int i = 1; i < cx.s.budget_runs; ++i) {
    contiguous_seconds.push_back(run_contiguous(cx, requests, fit_contiguous).seconds);
    paged_seconds.push_back(run_paged(cx, requests, max_slots, cx.s.block_size, budget_bytes, true).seconds);
  }
  contiguous.seconds = median(contiguous_seconds);
  paged.seconds = median(paged_seconds);
  const int blocks = static_cast<int>(budget_bytes / (cx.s.block_size * cx.bytes_per_token));

  Table t(fmt::format("2. One budget of {:.1f} MB for K and V: how many sequences run at once ({})", budget / 1e6, cx.machine_line),
          {"layout", "sequences the budget holds", "most running at once", "mean batch", "steps",
           fmt::format("total (s, median of {})", cx.s.budget_runs), "throughput (tokens/s)", "preemptions", "tokens = contiguous run"});
  const auto row = [&](const WorkloadRun& r, const std::string& fits) {
    const ServeSummary s = summarize(r.requests, r.steps);
    t.add_row({r.layout, fits, std::to_string(r.max_running), fmt::format("{:.1f}", s.mean_batch()), std::to_string(s.steps),
               cell::secs(r.seconds), fmt::format("{:.1f}", static_cast<double>(r.tokens()) / r.seconds), std::to_string(r.preemptions),
               r.layout == "contiguous" ? "" : fmt::format("{} of {}", same_tokens(r.requests, contiguous.requests), requests.size())});
    cx.figures["budget"].push_back({{"layout", r.layout}, {"fits", fits}, {"max_running", r.max_running},
                                    {"mean_batch", s.mean_batch()}, {"steps", s.steps}, {"seconds", r.seconds},
                                    {"preemptions", r.preemptions}});
  };
  row(contiguous, fmt::format("{} (prompt + {} reserved each)", fit_contiguous, cx.s.max_len));
  row(paged, fmt::format("{} blocks of {}: as many as their lengths allow", blocks, cx.s.block_size));
  t.add_note(fmt::format("Budget: {} contiguous reservation{} of {} positions (the longest prompt + the {}-token cap − 1), {} each{}.",
                         fit_contiguous, fit_contiguous == 1 ? "" : "s", b.positions, cx.s.max_len, format_bytes(b.per_sequence),
                         cx.s.budget_mib > 0 ? " (set by --budget-mib)" : ""));
  t.add_note(fmt::format("Paged: up to {} slots, admitted while the pool has blocks for the prompt and the running sequences' next "
                         "step; a request that finds the pool empty mid-answer is preempted (blocks freed, recomputed later). "
                         "Prefix caching on. Contiguous: chapter 04's scheduler with as many slots as reservations fit.",
                         max_slots));
  cx.emit(t);
}

// ---- table 3: a shared system prompt ----

std::vector<int32_t> system_prompt(const Context& cx) {
  const std::string text =
      "You are a helpful, careful and friendly assistant for a small public library. Answer the visitor's question in plain "
      "words and in at most three sentences. If you do not know the answer, say so and suggest where in the library the "
      "visitor could look: the reference desk on the ground floor, the periodicals room on the first floor, or the online "
      "catalogue. Never invent book titles, authors or opening hours. Be polite, avoid jargon, and do not use lists unless "
      "the visitor asks for one. The library is open to everyone, lends books for three weeks, and renews them twice if "
      "nobody else has reserved them. Children under twelve need a parent to sign their card. ";
  const std::vector<int32_t> once = cx.m.tokenizer.encode(text);
  std::vector<int32_t> out;
  while (std::ssize(out) < cx.s.system_tokens) out.push_back(once[out.size() % once.size()]);
  return out;
}

struct PrefixResult {
  PagedStats stats;
  double prefill_seconds = 0;
  int blocks_after_prefill = 0;
  std::size_t bytes_per_block = 0;
  std::vector<Request> requests;
  std::vector<int64_t> cached_tokens;  // per request, in admission order: prompt positions taken from the cache
};

// Admits the requests one by one, timing each one's prefill step, keeps them all resident, then
// decodes them together to their last token.
PrefixResult serve_shared_prompt(const Context& cx, std::vector<Request> requests, bool prefix_caching, ProgressBar& bar) {
  PagedEngineOptions po;
  po.block_size = cx.s.block_size;
  po.prefix_caching = prefix_caching;
  int64_t blocks = 1;
  for (const Request& r : requests) blocks += (std::ssize(r.prompt) + r.max_new_tokens + po.block_size - 1) / po.block_size;
  po.budget_bytes = blocks * po.block_size * cx.bytes_per_token;
  PagedEngine engine(cx.m.model, cx.o.sampling, po);
  PrefixResult out;
  for (Request& r : requests) {
    const int64_t cached_before = engine.stats().cached_tokens;
    engine.admit(r, r.max_new_tokens);
    out.cached_tokens.push_back(engine.stats().cached_tokens - cached_before);
    Request* one[] = {&r};
    Stopwatch watch;
    r.tokens.push_back(engine.step(one).front());
    out.prefill_seconds += watch.seconds();
    bar.advance();
  }
  out.blocks_after_prefill = engine.pool().used_blocks();
  for (;;) {
    std::vector<Request*> running;
    for (Request& r : requests)
      if (!r.done()) running.push_back(&r);
    if (running.empty()) break;
    const std::vector<int32_t> next = engine.step(running);
    for (std::size_t i = 0; i < running.size(); ++i) running[i]->tokens.push_back(next[i]);
  }
  for (const Request& r : requests) engine.release(r);
  out.stats = engine.stats();
  out.bytes_per_block = engine.pool().bytes_per_block();
  out.requests = std::move(requests);
  return out;
}

// "a" or "a–b": the smallest and largest of the cached counts from first to last.
std::string cached_range(const std::vector<int64_t>& cached, std::size_t first, std::size_t last) {
  const auto [lo, hi] = std::minmax_element(cached.begin() + static_cast<std::ptrdiff_t>(first),
                                            cached.begin() + static_cast<std::ptrdiff_t>(last));
  return *lo == *hi ? std::to_string(*lo) : fmt::format("{}–{}", *lo, *hi);
}

// What the requests found in the prefix cache, as measured: the first finds nothing, one with a
// new question finds the system prompt's full blocks, and one that repeats a question can also
// find the full blocks that hold the question's start (the prefix cache keeps full blocks only).
std::string prefix_hits_note(const std::vector<int64_t>& cached, int64_t system_blocks) {
  const std::size_t n = cached.size();
  const std::size_t questions = std::min(n, workload_prompts().size());
  std::string note = fmt::format("With the prefix cache, the first request computes its whole prompt ({} positions from the cache).", cached[0]);
  if (questions > 1)
    note += fmt::format(" The next {}, each with a new question, find the system prompt's {} full blocks by their chained hashes ({} "
                        "positions each) and compute the rest: the system prompt's last, partly filled block and the question.",
                        questions - 1, system_blocks, cached_range(cached, 1, questions));
  if (n > questions)
    note += fmt::format(" The {} that repeat an earlier question take {} positions each: where a prompt fills the block that holds "
                        "the question's start, that block is found too.",
                        n - questions, cached_range(cached, questions, n));
  return note + " The blocks are held once, by every request's table.";
}

void prefix_table(const Context& cx) {
  const std::vector<int32_t> system = system_prompt(cx);
  std::vector<Request> requests;
  for (int i = 0; i < cx.s.prefix_requests; ++i) {
    Request r;
    r.id = i;
    r.prompt = system;
    const std::vector<int32_t> q = cx.m.tokenizer.encode(" Visitor: " + workload_prompts()[i % std::ssize(workload_prompts())]);
    r.prompt.insert(r.prompt.end(), q.begin(), q.end());
    r.max_new_tokens = cx.s.prefix_new;
    requests.push_back(std::move(r));
  }
  ProgressBar bar("shared system prompt: cold, then shared", 2 * cx.s.prefix_requests);
  const PrefixResult cold = serve_shared_prompt(cx, requests, false, bar);
  const PrefixResult shared = serve_shared_prompt(cx, requests, true, bar);
  bar.done();

  Table t(fmt::format("3. A {}-token system prompt shared by {} requests ({} new tokens each, blocks of {}): prefill once, not {} times ({})",
                      system.size(), requests.size(), cx.s.prefix_new, cx.s.block_size, requests.size(), cx.machine_line),
          {"prefix cache", "prompt tokens computed", "taken from cache", "prefill time (s)", "per request (ms)",
           "KV held after all prefills (MB)", "blocks", "tokens = cold"});
  const auto row = [&](const std::string& name, const PrefixResult& r) {
    const double held = static_cast<double>(r.blocks_after_prefill) * static_cast<double>(r.bytes_per_block);
    t.add_row({name, std::to_string(r.stats.prefill_tokens), std::to_string(r.stats.cached_tokens), cell::secs(r.prefill_seconds),
               fmt::format("{:.1f}", 1e3 * r.prefill_seconds / static_cast<double>(r.requests.size())), mb(held),
               std::to_string(r.blocks_after_prefill),
               &r == &cold ? "" : fmt::format("{} of {}", same_tokens(r.requests, cold.requests), r.requests.size())});
    cx.figures["prefix"].push_back({{"mode", name}, {"prefill_tokens", r.stats.prefill_tokens}, {"cached_tokens", r.stats.cached_tokens},
                                    {"prefill_seconds", r.prefill_seconds}, {"held_bytes", held}, {"blocks", r.blocks_after_prefill}});
  };
  row("off (cold)", cold);
  row("on (shared)", shared);
  t.add_row({"shared ÷ cold",
             cell::times(static_cast<double>(shared.stats.prefill_tokens) / static_cast<double>(cold.stats.prefill_tokens)), "",
             cell::times(shared.prefill_seconds / cold.prefill_seconds), "",
             cell::times(static_cast<double>(shared.blocks_after_prefill) / static_cast<double>(cold.blocks_after_prefill)), "", ""});
  t.add_note("Each request: the system prompt, then \" Visitor: \" and one of chapter 04's 8 prompts. They are admitted one at a time "
             "and each one's prefill step is timed; all stay resident until every prompt is in, then they decode together.");
  t.add_note(prefix_hits_note(shared.cached_tokens, std::ssize(system) / cx.s.block_size));
  cx.emit(t);
}

// ---- table 4: n samples of one prompt ----

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

// ---- table 5: block size ----

// One decode step of `slots` sequences, each holding `cached` positions, per layout: contiguous
// caches and paged caches of each block size. The layouts are timed in turn, repeat after
// repeat, so that a slow moment of a shared machine hits all of them alike; each run writes the
// same position again (paged caches are truncated back first).
struct TimedLayout {
  std::unique_ptr<BlockPool> pool;  // declared first: the caches release into it
  std::vector<std::unique_ptr<KvStore>> caches;
  std::vector<double> seconds;
};

std::vector<double> time_layouts(const Context& cx, std::span<const int32_t> text) {
  const LlamaConfig& c = cx.m.model.config();
  const int64_t cached = cx.s.cached;
  const int batch = cx.s.slots;
  const auto token = [&](int64_t i) { return text[i % std::ssize(text)]; };
  std::vector<std::vector<int32_t>> prompts;
  std::vector<int32_t> next;
  for (int b = 0; b < batch; ++b) {
    std::vector<int32_t> p;
    for (int64_t i = 0; i < cached; ++i) p.push_back(token(i + 7 * b));
    prompts.push_back(std::move(p));
    next.push_back(token(3 + b));
  }
  std::vector<TimedLayout> layouts(1 + kBlockSizes.size());
  for (int b = 0; b < batch; ++b) layouts[0].caches.push_back(std::make_unique<GroupedKvCache>(c, cached + 1, cx.m.model.device()));
  for (std::size_t i = 0; i < kBlockSizes.size(); ++i) {
    const int B = kBlockSizes[i];
    const int64_t blocks = batch * ((cached + 1 + B - 1) / B);
    layouts[i + 1].pool = std::make_unique<BlockPool>(c, B, blocks * B * cx.bytes_per_token, cx.m.model.device());
    for (int b = 0; b < batch; ++b) {
      auto cache = std::make_unique<PagedKvCache>(*layouts[i + 1].pool, c);
      if (!cache->reserve(cached + 1)) throw std::logic_error("time_layouts: pool too small");
      layouts[i + 1].caches.push_back(std::move(cache));
    }
  }
  ProgressBar bar("block sizes: prefilling, then timing decode steps", std::ssize(layouts) * (1 + cx.s.repeats));
  const auto chunks_of = [&](TimedLayout& l, bool prefill) {
    std::vector<SequenceChunk> chunks;
    for (int b = 0; b < batch; ++b)
      chunks.push_back({prefill ? std::span<const int32_t>(prompts[b]) : std::span<const int32_t>(next).subspan(b, 1),
                        prefill ? 0 : cached, l.caches[b].get(), false});
    return chunks;
  };
  const auto rewind = [&](TimedLayout& l) {
    if (l.pool == nullptr) return;  // a contiguous cache is simply written at the same position again
    for (auto& cache : l.caches) static_cast<PagedKvCache&>(*cache).truncate(cached);
  };
  for (TimedLayout& l : layouts) {
    cx.m.model.forward_batch(chunks_of(l, true));
    cx.m.model.forward_batch(chunks_of(l, false));  // warm-up
    bar.advance();
  }
  for (int r = 0; r < cx.s.repeats; ++r)
    for (TimedLayout& l : layouts) {
      rewind(l);
      const std::vector<SequenceChunk> chunks = chunks_of(l, false);
      Stopwatch watch;
      cx.m.model.forward_batch(chunks);
      l.seconds.push_back(watch.seconds());
      bar.advance();
    }
  bar.done();
  std::vector<double> medians;
  for (const TimedLayout& l : layouts) medians.push_back(median(l.seconds));
  return medians;
}

void block_size_table(const Context& cx, const WorkloadRuns& runs) {
  const std::vector<int32_t> text = cx.m.tokenizer.encode(
      "Blocks of a fixed size hold the keys and values of a few positions each; a table per sequence says where its "
      "blocks are, and attention walks the table. ");
  const std::vector<double> medians = time_layouts(cx, text);
  const double contiguous = medians[0];
  const std::vector<double> paged(medians.begin() + 1, medians.end());

  Table t(fmt::format("5. Block size: memory waste against step time ({} sequences × {} cached positions, median of {}; {})", cx.s.slots,
                      cx.s.cached, cx.s.repeats, cx.machine_line),
          {"layout", "bytes per block", "waste on the workload (table 1)", fmt::format("blocks per sequence at {} positions", cx.s.cached), "step time (ms)",
           "× contiguous"});
  t.add_row({"contiguous (chapter 03's GroupedKvCache)", "", cell::percent(runs.contiguous.memory.waste()), "1", fmt::format("{:.1f}", contiguous * 1e3),
             "1.00×"});
  for (std::size_t i = 0; i < kBlockSizes.size(); ++i) {
    const int b = kBlockSizes[i];
    t.add_row({fmt::format("paged, blocks of {}", b), format_bytes(static_cast<double>(b) * static_cast<double>(cx.bytes_per_token)),
               cell::percent(runs.paged[i].memory.waste()), std::to_string((cx.s.cached + b - 1) / b), fmt::format("{:.1f}", paged[i] * 1e3),
               cell::times(paged[i] / contiguous)});
    cx.figures["block_size"].push_back({{"block_size", b}, {"waste", runs.paged[i].memory.waste()}, {"step_seconds", paged[i]},
                                        {"contiguous_step_seconds", contiguous}});
  }
  t.add_note("Smaller blocks waste less (a sequence leaves at most B − 1 positions of its last block unused) but give attention more, "
             "shorter runs of rows to walk and the scheduler more blocks to track; larger blocks the reverse. The step is mostly "
             "the weights' matrix products, which paging does not touch, so the attention loop's cost moves it little.");
  cx.emit(t);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Chapter 05: paged KV blocks — block tables, prefix sharing, copy-on-write, admission by free blocks"};
  CommonOptions o;
  Settings s;
  add_common_options(app, o, PromptFlags::absent);  // the workload brings its own prompts
  app.add_option("--requests", s.requests, "requests of chapter 04's workload in tables 1, 2 and 5 (64: all of it)")
      ->check(whole_number(1, 4096))->capture_default_str();
  app.add_option("--slots", s.slots, "batch slots of the contiguous runs (and sequences in the timed step)")
      ->check(whole_number(1, 64))->capture_default_str();
  app.add_option("--block-size", s.block_size, "positions per block in tables 2, 3 and 4")
      ->check(whole_number(1, 8192))->capture_default_str();
  app.add_option("--max-len", s.max_len, "the server's cap on new tokens, which a contiguous cache reserves")
      ->check(whole_number(1, 8192))->capture_default_str();
  app.add_option("--budget-mib", s.budget_mib, "table 2's K/V budget in MiB (0: what --slots contiguous reservations need)")
      ->check(real_number(0.0, 1e6))->capture_default_str();
  app.add_option("--system-tokens", s.system_tokens, "length of table 3's shared system prompt")
      ->check(whole_number(1, 4096))->capture_default_str();
  app.add_option("--prefix-requests", s.prefix_requests, "requests sharing the system prompt")
      ->check(whole_number(1, 1024))->capture_default_str();
  app.add_option("--prefix-new", s.prefix_new, "new tokens per request in table 3")->check(whole_number(1, 1024))->capture_default_str();
  app.add_option("--samples", s.samples, "samples of one prompt in table 4")->check(whole_number(1, 64))->capture_default_str();
  app.add_option("--sample-tokens", s.sample_tokens, "new tokens per sample")->check(whole_number(1, 1024))->capture_default_str();
  app.add_option("--sample-temp", s.sample_temp, "sampling temperature in table 4")->check(real_number(0.0, 10.0))->capture_default_str();
  app.add_option("--cached", s.cached, "cache length of each sequence in table 5's timed step")
      ->check(whole_number(1, 4096))->capture_default_str();
  app.add_option("--repeats", s.repeats, "timed repeats per step time (the median is reported)")
      ->check(whole_number(1))->capture_default_str();
  app.add_option("--budget-runs", s.budget_runs, "runs of each layout in table 2, in turn (the median time is reported)")
      ->check(whole_number(1, 100))->capture_default_str();

  return run_main(app, argc, argv, [&] {
    const int context = read_model_config(o).context_length;  // from the metadata, before the weights load
    if (s.cached + 1 > context) throw UsageError(fmt::format("--cached {} leaves no room in the context of {}", s.cached, context));
    LoadedModel m = load_model(o);
    const LlamaConfig& c = m.model.config();
    RunRecord record = new_record("ch05_paged_blocks", o, "tables");
    const BandwidthResult bw = measure_read_bandwidth();
    const Context cx{{m, o, record.figures, machine_line(bw)}, s, c.kv_bytes_per_token(sizeof(float))};
    record.figures["machine"] = {{"threads", num_threads()}, {"read_bandwidth_bytes_per_s", bw.bytes_per_second}};

    WorkloadOptions wo;
    wo.requests = s.requests;
    wo.max_tokens = s.max_len;
    const std::vector<Request> requests = make_workload(m.tokenizer, wo);
    const Budget budget = fixed_budget(cx, requests);

    const WorkloadRuns runs = memory_table(cx, requests);
    budget_table(cx, requests, budget, runs.contiguous);
    prefix_table(cx);
    samples_table(cx);
    block_size_table(cx, runs);
    save_record(record, o, nullptr);
  });
}
