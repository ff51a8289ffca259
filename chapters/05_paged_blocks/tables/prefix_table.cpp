#include "prefix_table.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "04_batching/workload/workload.hpp"
#include "measure/progress.hpp"
#include "measure/table.hpp"
#include "measure/timing.hpp"
#include "paged_engine.hpp"

namespace infer::paging {
namespace {

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

}  // namespace

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

}  // namespace infer::paging
