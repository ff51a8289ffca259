#include "memory_tables.hpp"

#include <algorithm>
#include <functional>
#include <memory>
#include <random>

#include <fmt/format.h>

#include "kv_cache.hpp"
#include "measure/progress.hpp"
#include "measure/timing.hpp"
#include "01_naive_loop/naive_generate.hpp"
#include "study_caches.hpp"
#include "tensor/memory.hpp"
#include "tensor/ops.hpp"

namespace infer::kv {

int64_t peak_of(const Device& dev, const std::function<void()>& fn) {
  const int64_t before = memory_stats(dev).current_bytes;
  reset_peak_memory(dev);
  fn();
  return memory_stats(dev).peak_bytes - before;
}

namespace {

// One pass; the most likely next token after its last position (no copy of the logits).
int32_t pass(Llama& model, std::span<const int32_t> tokens, int64_t pos0, KvStore& store, bool all_logits) {
  const Tensor logits = model.forward(tokens, pos0, store, all_logits);
  return ops::argmax(logits.row(logits.dim(0) - 1));
}

// The four loops of the table, each as what its peak step holds.
enum class Loop { course_naive, ch01, course_cached, ch02 };

// The largest step of a generation of G tokens after P: the last pass for the loops without a
// cache (P + G − 1 tokens), the larger of the prefill and the last decode step for the loops with
// one. `tokens` holds at least P + G − 1; `capacity` is the preallocated cache's.
int64_t largest_step(LoadedModel& m, Loop loop, std::span<const int32_t> tokens, int64_t P, int64_t G, int64_t capacity) {
  Llama& model = m.model;
  const LlamaConfig& c = model.config();
  const Device dev = model.device();
  const int64_t n = P + G - 1;
  if (loop == Loop::course_naive || loop == Loop::ch01) {
    return peak_of(dev, [&] {
      if (loop == Loop::course_naive) {
        EagerAttention eager(c);
        (void)pass(model, tokens.first(n), 0, eager, /*all_logits=*/true);
      } else {
        NoCache none(c);  // chapter 01: the last position's logits, copied out as generate_naive does
        (void)model.forward(tokens.first(n), 0, none).to(Device::cpu());
      }
    });
  }
  const int64_t before = memory_stats(dev).current_bytes;
  reset_peak_memory(dev);
  int64_t prefill = 0, decode = 0;
  {
    std::unique_ptr<KvStore> cache;
    if (loop == Loop::course_cached)
      cache = std::make_unique<ConcatKvCache>(c, ConcatKvCache::Layout::kv_heads, dev);
    else
      cache = std::make_unique<KvCache>(c, capacity, dev);
    const bool all = loop == Loop::course_cached;  // the course's prefill keeps every prompt position's logits
    auto run = [&](int64_t from, int64_t count, bool all_logits) {
      const auto span = tokens.subspan(from, count);
      if (loop == Loop::ch02)
        (void)model.forward(span, from, *cache).to(Device::cpu());  // as generate_cached does
      else
        (void)pass(model, span, from, *cache, all_logits);
    };
    run(0, P, all);
    prefill = memory_stats(dev).peak_bytes - before;
    if (G > 1) {
      if (G > 2) run(P, G - 2, false);  // positions P … P+G−3, not measured: the cache reaches its last length
      reset_peak_memory(dev);
      run(n - 1, 1, false);
      decode = memory_stats(dev).peak_bytes - before;
    }
  }
  return std::max(prefill, decode);
}

// The course's loops run for real on the demo's tokens (its prompt, then the tokens chapter 02
// generated), to compare with chapter 01's and 02's whole runs.
struct CourseRuns {
  int64_t naive_peak = 0, cached_peak = 0;
  bool naive_same = true, cached_same = true;  // their greedy choices equal the demo's tokens
};

CourseRuns run_course_loops(LoadedModel& m, const std::vector<int32_t>& prompt, const Generation& demo) {
  Llama& model = m.model;
  const LlamaConfig& c = model.config();
  const Device dev = model.device();
  const auto P = std::ssize(prompt);
  const auto G = std::ssize(demo.steps);
  CourseRuns r;
  ProgressBar bar("the course's two loops on the demo's tokens", 2 * G);
  r.naive_peak = peak_of(dev, [&] {
    EagerAttention eager(c);
    std::vector<int32_t> seq = prompt;
    for (int64_t j = 0; j < G; ++j) {  // the whole sequence every step, logits for every position
      r.naive_same = r.naive_same && pass(model, seq, 0, eager, true) == demo.steps[j].token;
      seq.push_back(demo.steps[j].token);
      bar.advance();
    }
  });
  r.cached_peak = peak_of(dev, [&] {
    ConcatKvCache cache(c, ConcatKvCache::Layout::kv_heads, dev);
    r.cached_same = pass(model, prompt, 0, cache, true) == demo.steps[0].token;  // prefill
    bar.advance();
    for (int64_t j = 1; j < G; ++j) {  // then one token per step against the concatenated cache
      const int32_t fed = demo.steps[j - 1].token;
      r.cached_same = r.cached_same && pass(model, {&fed, 1}, P + j - 1, cache, false) == demo.steps[j].token;
      bar.advance();
    }
  });
  bar.done();
  return r;
}

}  // namespace

void peak_memory_table(const Context& cx, const std::vector<int32_t>& prompt, const LoopRun& cached, const LoopRun& naive) {
  LoadedModel& m = cx.m;
  const LlamaConfig& c = m.model.config();
  if (!m.model.device().is_cpu()) {
    fmt::print("8. Peak memory: the course's loops run on the CPU only (their softmax is host code); skipped on {}.\n\n",
               m.model.device().name());
    return;
  }
  const auto P = std::ssize(prompt);
  const auto G = std::ssize(cached.gen.steps);
  const int64_t capacity = P + cx.o.n_predict;  // what the demo's KvCache was allocated for
  const CourseRuns course = run_course_loops(m, prompt, cached.gen);

  // The generations of 256 tokens, by their largest step (filler tokens: memory does not depend
  // on which tokens they are).
  constexpr int64_t kLong = 256, kCoursePrompt = 40;
  std::vector<int64_t> prompts{P};
  if (P != kCoursePrompt) prompts.push_back(kCoursePrompt);
  std::erase_if(prompts, [&](int64_t p) { return p + kLong > c.context_length; });
  const std::vector<int32_t> filler = filler_tokens(m.tokenizer, kCoursePrompt + P + kLong);
  const std::vector<Loop> loops{Loop::course_naive, Loop::ch01, Loop::course_cached, Loop::ch02};
  std::vector<std::vector<int64_t>> long_peaks(loops.size());
  std::vector<int64_t> demo_steps;  // the same measurement on the demo's shape, to check it against the whole runs
  std::vector<int32_t> demo_tokens = prompt;
  for (const StepRecord& s : cached.gen.steps) demo_tokens.push_back(s.token);
  {
    ProgressBar bar("largest steps of longer generations", std::ssize(loops) * (std::ssize(prompts) + 1));
    for (std::size_t i = 0; i < loops.size(); ++i) {
      demo_steps.push_back(largest_step(m, loops[i], demo_tokens, P, G, capacity));
      bar.advance();
      for (int64_t p : prompts) {
        long_peaks[i].push_back(largest_step(m, loops[i], filler, p, kLong, p + kLong));
        bar.advance();
      }
    }
    bar.done();
  }
  const std::vector<int64_t> whole{course.naive_peak, naive.peak_bytes, course.cached_peak, cached.peak_bytes};
  const bool steps_match = whole == demo_steps;

  std::vector<std::string> headers{"generation loop", "keeps", fmt::format("demo, {} + {} (whole run)", P, G)};
  for (int64_t p : prompts) headers.push_back(fmt::format("{} + {} (largest step)", p, kLong));
  Table t("8. Peak memory above the weights (from the allocator): the course's loops beside chapters 01 and 02", headers);
  const std::vector<std::pair<std::string, std::string>> names{
      {"course: naive loop", "n×n scores per head, logits for every position"},
      {"ch01 naive loop", "one score row at a time, last position's logits"},
      {"course: cached loop", "torch.cat cache of the 3 kv heads, every prompt logit"},
      {"ch02 KV cache", "preallocated cache of 9 heads, last logits"}};
  auto bytes = [](int64_t b) { return format_bytes(static_cast<double>(b)); };
  for (std::size_t i = 0; i < loops.size(); ++i) {
    std::vector<std::string> row{names[i].first, names[i].second, bytes(whole[i])};
    for (int64_t b : long_peaks[i]) row.push_back(bytes(b));
    t.add_row(row);
  }
  auto ratio_row = [&](const std::string& name, std::size_t a, std::size_t b) {
    std::vector<std::string> row{name, "", cell::times(static_cast<double>(whole[a]) / static_cast<double>(whole[b]), 1)};
    for (std::size_t k = 0; k < prompts.size(); ++k)
      row.push_back(cell::times(static_cast<double>(long_peaks[a][k]) / static_cast<double>(long_peaks[b][k]), 1));
    t.add_row(row);
  };
  ratio_row("course naive ÷ course cached", 0, 2);
  ratio_row("ch01 ÷ ch02", 1, 3);
  const int64_t n = prompts.back() + kLong - 1, V = c.vocab_size;
  t.add_note(fmt::format("at {} + {}: logits for every position n × V × 4 B = {} × {} × 4 = {}; one layer's score matrices H × n² × 4 B = {};",
                         prompts.back(), kLong, n, V, bytes(n * V * 4), bytes(int64_t{c.n_heads} * n * n * 4)));
  t.add_note(fmt::format("the prompt's logits {}; cache per token: {} for the course's (3 kv heads, fp32), {} for chapter 02's (9 heads).",
                         bytes(prompts.back() * V * 4), bytes(c.kv_bytes_per_token(4)),
                         bytes(c.kv_bytes_per_token(4, c.n_heads))));
  t.add_note(fmt::format("the course's loops, run on the demo's tokens: greedy choices equal chapter 02's tokens: {} (naive), {} (cached);",
                         course.naive_same ? "yes" : "no", course.cached_same ? "yes" : "no"));
  t.add_note(fmt::format("largest step: the loops free everything between steps and a cache only grows, so one pass sets the peak; measured "
                         "that way on the demo's shape it gives the whole runs' peaks: {}.", steps_match ? "yes, all four" : "NO"));
  cx.emit(t);

  nlohmann::json& f = cx.figures["peak_memory"];
  f["demo"] = {{"P", P}, {"G", G}, {"course_naive", whole[0]}, {"ch01", whole[1]}, {"course_cached", whole[2]}, {"ch02", whole[3]},
               {"ch02_cache_bytes", cached.cache_bytes}, {"largest_step_equals_whole_run", steps_match}};
  for (std::size_t k = 0; k < prompts.size(); ++k)
    f["long"].push_back({{"P", prompts[k]}, {"G", kLong}, {"course_naive", long_peaks[0][k]}, {"ch01", long_peaks[1][k]},
                         {"course_cached", long_peaks[2][k]}, {"ch02", long_peaks[3][k]}});
}

void cache_bytes_table(const Context& cx) {
  const LlamaConfig& c = cx.m.model.config();
  const Device dev = cx.m.model.device();
  const int64_t per_token = c.kv_bytes_per_token(4, c.n_heads);
  Table t(fmt::format("9. KV cache size: caches built one after the other, summed; formula 2 × {} layers × {} heads × {} × 4 B = {} per token",
                      c.n_layers, c.n_heads, c.head_dim, format_count(static_cast<double>(per_token))),
          {"users × tokens", "KvCache::bytes() (bytes)", "allocator (bytes)", "formula (bytes)", "equal"});
  const std::vector<std::pair<int64_t, int64_t>> shapes{{4, 2048}, {8, 1024}, {16, 512}};
  ProgressBar bar("building caches", std::ssize(shapes));
  bool all_equal = true;
  for (const auto& [users, n] : shapes) {
    if (n > c.context_length) continue;
    int64_t reported = 0, allocated = 0;
    for (int64_t u = 0; u < users; ++u) {
      const int64_t before = memory_stats(dev).current_bytes;
      const KvCache cache(c, n, dev);
      allocated += memory_stats(dev).current_bytes - before;
      reported += static_cast<int64_t>(cache.bytes());
    }
    const int64_t formula = users * n * per_token;
    const bool equal = reported == formula && allocated == formula;
    all_equal = all_equal && equal;
    t.add_row({fmt::format("{} × {}", users, n), format_count(static_cast<double>(reported)), format_count(static_cast<double>(allocated)),
               format_count(static_cast<double>(formula)), equal ? "yes" : "NO"});
    cx.figures["cache_bytes"].push_back({{"users", users}, {"tokens", n}, {"kvcache_bytes", reported}, {"allocated", allocated}, {"formula", formula}});
    bar.advance();
  }
  bar.done();
  t.add_note(fmt::format("{:.2f} GB for 8192 cached tokens, whatever way they are split between users; this model stores its {} key/value",
                         static_cast<double>(8192 * per_token) / 1e9, c.n_kv_heads));
  t.add_note(fmt::format("heads once per query head ({}×), the plain multi-head layout: chapter 03 stores each once.", c.n_heads / c.n_kv_heads));
  cx.emit(t);
  if (!all_equal) throw std::runtime_error("cache bytes differ from the formula");
}

void growth_table(const Context& cx, int64_t tokens) {
  const LlamaConfig& c = cx.m.model.config();
  const Device dev = cx.m.model.device();
  // One token's query, key and value, random but fixed, fed at every position of every layer.
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto random_row = [&](int64_t width) {
    std::vector<float> x(width);
    for (float& e : x) e = normal(rng);
    return Tensor::from_vector(x, {1, width}, dev);
  };
  const Tensor q = random_row(c.q_width()), k = random_row(c.kv_width()), v = random_row(c.kv_width());
  Tensor out({1, c.q_width()}, DType::f32, dev);
  std::vector<int64_t> marks;
  for (int64_t d : {8, 4, 2, 1})
    if (tokens / d >= 1 && (marks.empty() || tokens / d != marks.back())) marks.push_back(tokens / d);

  struct Mark {
    double seconds = 0;       // since the first step
    double copy_seconds = 0;  // of which allocating and copying (concatenation only)
    double last_copy = 0;     // allocating and copying per step: median of the last steps before the mark
    int64_t copied = 0, allocations = 0, peak = 0;
  };
  // Runs `tokens` decode steps through every layer of the store `make` builds; the allocator's
  // figures count from before it was built. `warm`: each layer's step runs once untimed first
  // (storing the same key and value again changes nothing), so the timed one finds the layer's
  // buffers in the CPU's caches, as concatenation's freshly copied buffers may be.
  auto run = [&](const std::function<std::unique_ptr<KvStore>()>& make, ProgressBar& bar, bool warm = false) {
    std::vector<Mark> out_marks;
    const int64_t before = memory_stats(dev).current_bytes;
    const int64_t allocations_before = memory_stats(dev).allocations;
    reset_peak_memory(dev);
    std::unique_ptr<KvStore> store = make();
    const auto* concat = dynamic_cast<const ConcatKvCache*>(store.get());
    std::vector<double> copies;
    double total = 0;
    for (int64_t t = 0; t < tokens; ++t) {
      const double copied_before = concat ? concat->copy_seconds() : 0;
      for (int l = 0; l < c.n_layers; ++l) {
        if (warm) store->attend(l, t, q, k, v, out);
        if (!dev.is_cpu()) (void)out.to(Device::cpu());  // wait for the device
        Stopwatch clock;
        store->attend(l, t, q, k, v, out);
        if (!dev.is_cpu()) (void)out.to(Device::cpu());
        total += clock.seconds();
      }
      copies.push_back(concat ? concat->copy_seconds() - copied_before : 0);
      if (std::find(marks.begin(), marks.end(), t + 1) != marks.end()) {
        const auto last = static_cast<std::ptrdiff_t>(std::min<std::size_t>(copies.size(), 16));
        out_marks.push_back({total, concat ? concat->copy_seconds() : 0, median(std::vector<double>(copies.end() - last, copies.end())),
                             concat ? concat->bytes_copied() : 0, memory_stats(dev).allocations - allocations_before,
                             memory_stats(dev).peak_bytes - before});
      }
      bar.advance();
    }
    return out_marks;
  };
  ProgressBar bar(fmt::format("{} decode steps through the cache, preallocated (cold and warm) and concatenated", tokens), 3 * tokens);
  const std::vector<Mark> pre = run([&] { return std::make_unique<KvCache>(c, tokens, dev); }, bar);
  const std::vector<Mark> warm = run([&] { return std::make_unique<KvCache>(c, tokens, dev); }, bar, /*warm=*/true);
  const std::vector<Mark> cat =
      run([&] { return std::make_unique<ConcatKvCache>(c, ConcatKvCache::Layout::query_heads, dev); }, bar);
  bar.done();

  const int64_t per_token = c.kv_bytes_per_token(4, c.n_heads);
  Table t(fmt::format("10. Growing the cache by concatenation vs preallocating it: n decode steps of the cache's own work, {} layers, "
                      "chapter 02's layout ({})", c.n_layers, cx.machine_line),
          {"n (steps)", "preallocated (ms)", "preallocated, warm (ms)", "concatenated (ms)", "of which alloc + copy (ms)", "alloc + copy per step at n (ms)",
           "copied (bytes)", "n(n−1)/2 × bytes per token", "allocations: prealloc / concat", "peak: prealloc / concat"});
  for (std::size_t i = 0; i < marks.size(); ++i) {
    const int64_t n = marks[i];
    const Mark &a = pre[i], &b = cat[i];
    t.add_row({std::to_string(n), cell::ms(a.seconds), cell::ms(warm[i].seconds), cell::ms(b.seconds), cell::ms(b.copy_seconds), fmt::format("{:.3f}", b.last_copy * 1e3),
               format_bytes(static_cast<double>(b.copied)), format_bytes(static_cast<double>(n * (n - 1) / 2 * per_token)),
               fmt::format("{} / {}", a.allocations, b.allocations),
               fmt::format("{} / {}", format_bytes(static_cast<double>(a.peak)), format_bytes(static_cast<double>(b.peak)))});
    cx.figures["growth"].push_back({{"n", n}, {"prealloc_s", a.seconds}, {"prealloc_warm_s", warm[i].seconds}, {"concat_s", b.seconds}, {"concat_copy_s", b.copy_seconds},
                                    {"concat_copy_per_step_s", b.last_copy}, {"copied_bytes", b.copied},
                                    {"prealloc_allocations", a.allocations}, {"concat_allocations", b.allocations},
                                    {"prealloc_peak", a.peak}, {"concat_peak", b.peak}});
  }
  t.add_note("each step stores one token's key and value in every layer and attends one query over the whole cache, the same in both;");
  t.add_note("concatenation also allocates, per layer, a key and a value buffer one row longer and copies the old ones in: its copying grows");
  t.add_note(fmt::format("as n² in total, {} per cached token per step. alloc + copy per step: median of the last 16 steps. The preallocated "
                         "cache holds all {} rows from the start; concatenation holds what it has, plus one new buffer while it copies.",
                         format_bytes(static_cast<double>(per_token)), tokens));
  t.add_note(fmt::format("without alloc + copy, the rest of the work (stores and attention, the same arithmetic) took {} ms preallocated and {} ms "
                         "concatenated over the {} steps; {} ms preallocated when each layer's step had just run once (\"warm\": its buffers in "
                         "the CPU's caches).",
                         cell::ms(pre.back().seconds), cell::ms(cat.back().seconds - cat.back().copy_seconds), marks.back(),
                         cell::ms(warm.back().seconds)));
  t.add_note("The cache of every layer together (the peak column) is larger than the CPU's caches, so a step finds a layer's buffers "
             "wherever 29 other layers left them; a copy that has just written them may leave them closer. The warm column measures "
             "that difference on this machine; the alloc + copy columns are what concatenation adds.");
  if (cx.figures.contains("decode") && !cx.figures["decode"].empty()) {
    const double step = cx.figures["decode"].back()["seconds"].get<double>();
    const int64_t C = cx.figures["decode"].back()["C"].get<int64_t>();
    t.add_note(fmt::format("For scale: a whole decode step of the model at C = {} took {} ms (table 6).", C, cell::ms(step)));
  }
  cx.emit(t);
}

}  // namespace infer::kv
