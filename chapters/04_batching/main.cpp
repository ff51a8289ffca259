// ch04_batching — many requests per step: the batch-size knee, static vs continuous batching,
// and the course's latency/throughput model.
//
//   ch04_batching                          everything below on the default model (~3 min, 2 cores)
//   ch04_batching --requests 16            a smaller workload (the real runs dominate the time)
//   ch04_batching --gap-steps 0            every request arrives at time 0 (one burst)
//   ch04_batching --skip-real              the workload only simulated, from the measured sweep
//   ch04_batching --csv t.csv --json r.json --plot p.svg   (default plot: ./ch04_throughput_vs_latency.svg)
//
// The tables, in the order printed:
//   1  the batch sweep: B sequences, each with a 64-token cache, decode one token together
//   2  the analytic model beside it: intensities, bytes and FLOPs per step, modelled latency
//   3  the skewed workload, 8 slots, static vs continuous: real runs and the simulation
//   4  a few requests of the workload: why a finished request must leave at once
//   5  the course's worked example, Llama-2-13B on an H100, from its parameters
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include <fmt/format.h>

#include "analytic_model.hpp"
#include "app/cli.hpp"
#include "app/run_record.hpp"
#include "batch_decode.hpp"
#include "measure/bandwidth.hpp"
#include "measure/progress.hpp"
#include "measure/svg_plot.hpp"
#include "measure/table.hpp"
#include "measure/timing.hpp"
#include "simulate.hpp"
#include "tensor/ops.hpp"
#include "workload.hpp"

using namespace infer;
using nlohmann::json;

namespace {

struct Settings {
  int slots = 8;
  int requests = 64;
  double gap_steps = 3;  // mean gap between arrivals, in decode steps of a full batch
  int64_t cached = 64;   // cache length of every sequence in the sweep
  int repeats = 5;
  bool skip_real = false;
  std::string plot_path;
};

struct Context {
  LoadedModel& m;
  const CommonOptions& o;
  const Settings& s;
  json& figures;
  Machine machine;
  std::string machine_line;  // printed beside every timing
};

std::string ms(double seconds) { return fmt::format("{:.1f}", seconds * 1e3); }
std::string times(double r) { return fmt::format("{:.2f}×", r); }
std::string secs(double seconds) { return fmt::format("{:.2f}", seconds); }

void emit(const Table& table, const Context& cx) {
  table.print();
  table.append_csv(cx.o.csv_path);
}

// ---- the machine: read bandwidth, and the FLOP/s of a large sgemm on the same threads ----

double measure_peak_flops(int repeats) {
  constexpr int64_t n = 512, k = 2048, m = 2048;
  Tensor x({n, k}), w({m, k}), y({n, m});
  std::fill_n(x.host<float>(), n * k, 0.5f);
  std::fill_n(w.host<float>(), m * k, 0.25f);
  const double seconds = median_seconds(repeats, [&] { ops::matmul_t(x, w, y); });
  return 2.0 * static_cast<double>(n * k * m) / seconds;
}

// ---- table 1: the batch sweep ----

using SweepPoint = DecodeTiming;

std::vector<SweepPoint> batch_sweep(const Context& cx, const std::vector<int>& batches) {
  const std::vector<int32_t> text = cx.m.tokenizer.encode(
      "Many requests share one step: the weights are read once and serve every sequence in the "
      "batch, while each sequence attends only to its own cache of keys and values. ");
  ProgressBar bar("batch sweep: prefilling caches, then timing steps",
                  (batches.back() + kSweepPrefillGroup - 1) / kSweepPrefillGroup + static_cast<int64_t>(batches.size()));
  std::vector<SweepPoint> points = time_batched_decode(cx.m.model, text, batches, cx.s.cached, cx.s.repeats, [&] { bar.advance(); });
  bar.done();
  return points;
}

// The knee: the batch size after which batching stops paying. Doubling B pays while the step's
// latency grows by less than √2 — then throughput (B / latency) grows by more than latency does.
// The knee is the last B reached by a doubling that paid; every doubling after it did not.
std::size_t knee_index(const std::vector<SweepPoint>& p) {
  for (std::size_t i = p.size() - 1; i > 0; --i)
    if (p[i].seconds / p[i - 1].seconds <= std::sqrt(2.0)) return i;
  return 0;
}

void sweep_table(const Context& cx, const std::vector<SweepPoint>& p) {
  const std::size_t knee = knee_index(p);
  Table t(fmt::format("1. Batch sweep: B sequences, each holding a {}-token cache, decode one token in one step ({}, median of {})",
                      cx.s.cached, cx.machine_line, cx.s.repeats),
          {"B", "step latency (ms)", "latency × B=1", "throughput (tokens/s)", "throughput × B=1",
           "from B/2: throughput", "from B/2: latency", ""});
  for (std::size_t i = 0; i < p.size(); ++i) {
    const bool has_prev = i > 0;
    t.add_row({std::to_string(p[i].batch), ms(p[i].seconds), times(p[i].seconds / p[0].seconds),
               fmt::format("{:.1f}", p[i].throughput()), times(p[i].throughput() / p[0].throughput()),
               has_prev ? fmt::format("{:+.0f}%", 100 * (p[i].throughput() / p[i - 1].throughput() - 1)) : "",
               has_prev ? times(p[i].seconds / p[i - 1].seconds) : "", i == knee ? "← knee" : ""});
    cx.figures["sweep"].push_back({{"batch", p[i].batch}, {"seconds", p[i].seconds}, {"throughput", p[i].throughput()}});
  }
  const SweepPoint& k = p[knee];
  if (knee + 1 < p.size()) {
    const SweepPoint& after = p[knee + 1];
    t.add_note(fmt::format("Knee at B = {}: throughput ×{:.1f} for latency ×{:.2f} against B = 1. Doubling to {} adds {:+.0f}% "
                           "throughput for ×{:.2f} latency: from here on each user pays more than the server gains.",
                           k.batch, k.throughput() / p[0].throughput(), k.seconds / p[0].seconds, after.batch,
                           100 * (after.throughput() / k.throughput() - 1), after.seconds / k.seconds));
  } else {
    t.add_note(fmt::format("No knee up to B = {}: every doubling still raised throughput more than latency.", k.batch));
  }
  t.add_note("The knee: the last B reached by a doubling that raised throughput more than latency (latency × < √2); every "
             "doubling after it raises latency more. Before it a step is paid mostly by reading the weights, which every "
             "sequence shares; after it, by arithmetic, which every sequence needs for itself.");
  t.add_note("The course measured ×6.0 throughput for ×2.67 latency at B = 16, and +9% throughput for nearly ×2 latency from "
             "16 to 32, on its model and machine.");
  cx.figures["knee"] = k.batch;
  emit(t, cx);
}

// ---- table 2: the analytic model beside the sweep ----

DecodeShape own_shape(const Context& cx) {
  const LlamaConfig& c = cx.m.model.config();
  DecodeShape s = DecodeShape::of("this model, fp32", c, 4, 4);
  s.weight_bytes = static_cast<double>(cx.m.model.weights().bytes_per_token());  // what a step really reads
  return s;
}

std::vector<StepModel> model_table(const Context& cx, const std::vector<SweepPoint>& p) {
  const LlamaConfig& c = cx.m.model.config();
  const DecodeShape shape = own_shape(cx);
  const auto S = static_cast<double>(cx.s.cached);
  Table t(fmt::format("2. The analytic model for this model and machine (bandwidth {:.1f} GB/s, sgemm peak {:.1f} GFLOP/s, "
                      "balance {:.1f} FLOP/B), beside the measured sweep",
                      cx.machine.bandwidth / 1e9, cx.machine.peak_flops / 1e9, cx.machine.balance()),
          {"B", "MLP intensity (FLOP/B)", "attention intensity (FLOP/B)", "bytes / step", "GFLOP / step",
           "model latency (ms)", "bound by", "model tokens/s", "measured (ms)", "measured tokens/s", "measured / model"});
  std::vector<StepModel> rows;
  for (const SweepPoint& pt : p) {
    const StepModel m = model_decode_step(shape, cx.machine, pt.batch, S);
    rows.push_back(m);
    t.add_row({std::to_string(pt.batch), fmt::format("{:.1f}", mlp_intensity(pt.batch, 1, c.d_model, c.d_ff, 4)),
               fmt::format("{:.2f}", attention_intensity(S + 1, 1, 4)), format_bytes(m.bytes),
               fmt::format("{:.2f}", m.flops / 1e9), ms(m.latency), m.memory_bound() ? "memory" : "compute",
               fmt::format("{:.1f}", m.throughput), ms(pt.seconds), fmt::format("{:.1f}", pt.throughput()),
               times(pt.seconds / m.latency)});
    cx.figures["model"].push_back({{"batch", pt.batch}, {"mlp_intensity", mlp_intensity(pt.batch, 1, c.d_model, c.d_ff, 4)},
                                   {"attention_intensity", attention_intensity(S + 1, 1, 4)}, {"bytes", m.bytes},
                                   {"flops", m.flops}, {"latency", m.latency}, {"throughput", m.throughput},
                                   {"memory_bound", m.memory_bound()}, {"measured_seconds", pt.seconds}});
  }
  const double crossover = cx.machine.balance() / mlp_intensity(1, 1, c.d_model, c.d_ff, 4);
  t.add_note(fmt::format("Intensities in fp32 (e = 4 B per element), T = 1 new token: the MLP's is ≈ B·T/2 here (≈ B·T in the "
                         "course's bf16), attention's 2·S·T/(4·(S+T)) = {:.2f} at S = {} whatever B is.",
                         attention_intensity(S + 1, 1, 4), cx.s.cached + 1));
  t.add_note(fmt::format("bytes = weights read per step ({}) + B × {} cached positions × {} (keys and values, {} layers × {} kv heads "
                         "× {} × 4 B); FLOPs = B × (2 × {} matrix weights + 4 × L·H·D × S).",
                         format_bytes(shape.weight_bytes), cx.s.cached, format_bytes(shape.kv_bytes_per_token), c.n_layers,
                         c.n_kv_heads, c.head_dim, format_count(shape.matmul_weights)));
  t.add_note(fmt::format("latency = max(bytes / bandwidth, FLOPs / peak); the model turns compute-bound where the MLP intensity "
                         "reaches the machine's balance, B ≈ {:.0f}.", crossover));
  t.add_note("measured / model > 1: time the model does not see — small-batch sgemm below peak, attention and the other "
             "per-token work, threads' start-up.");
  emit(t, cx);
  return rows;
}

// ---- table 3 and 4: the workload, real and simulated ----

// Wraps the real engine to advance a progress bar by the tokens each step keeps.
class ProgressEngine : public StepEngine {
 public:
  ProgressEngine(StepEngine& inner, ProgressBar& bar) : inner_(inner), bar_(bar) {}
  void admit(const Request& r, int new_tokens) override { inner_.admit(r, new_tokens); }
  std::vector<int32_t> step(std::span<Request* const> batch) override {
    const auto useful = std::count_if(batch.begin(), batch.end(), [](const Request* r) { return !r->done(); });
    std::vector<int32_t> next = inner_.step(batch);
    bar_.advance(useful);
    return next;
  }
  void release(const Request& r) override { inner_.release(r); }

 private:
  StepEngine& inner_;
  ProgressBar& bar_;
};

PolicyRun run_real(const Context& cx, Policy policy, const std::vector<Request>& requests, int64_t total_tokens) {
  BatchDecoder decoder(cx.m.model, cx.o.sampling);
  ProgressBar bar(fmt::format("workload, {} batching, real", policy_name(policy)), total_tokens);
  ProgressEngine engine(decoder, bar);
  WallClock clock;
  PolicyRun run = serve(policy, requests, cx.s.slots, engine, clock);
  bar.done();
  return run;
}

json summary_json(const ServeSummary& s) {
  return {{"requests", s.requests}, {"tokens", s.tokens}, {"total_seconds", s.total_seconds}, {"throughput", s.throughput},
          {"mean_latency", s.mean_latency}, {"p50_latency", s.p50_latency}, {"p99_latency", s.p99_latency},
          {"mean_ttft", s.mean_ttft}, {"p50_ttft", s.p50_ttft}, {"p99_ttft", s.p99_ttft}, {"steps", s.steps},
          {"mean_batch", s.mean_batch()}, {"padding_rows", s.padding_rows}};
}

void workload_tables(const Context& cx, const std::vector<SweepPoint>& sweep) {
  // The cost model: step seconds against tokens fed, from the sweep.
  const StepCostModel cost = cost_model_from(sweep);
  const double full_step = cost(cx.s.slots);
  WorkloadOptions wo;
  wo.requests = cx.s.requests;
  wo.mean_gap = cx.s.gap_steps * full_step;
  const std::vector<Request> requests = make_workload(cx.m.tokenizer, wo);
  std::vector<int> lengths;
  for (const Request& r : requests) lengths.push_back(r.max_new_tokens);
  std::vector<int> sorted = lengths;
  std::sort(sorted.begin(), sorted.end());
  const int64_t total = std::accumulate(lengths.begin(), lengths.end(), int64_t{0});
  const double median_len = percentile(std::vector<double>(sorted.begin(), sorted.end()), 50);
  const std::string shape = fmt::format(
      "{} requests, output lengths median {:g}, longest {}, total {} (seeded log-normal); arrivals: {}", requests.size(),
      median_len, sorted.back(), total,
      cx.s.gap_steps > 0 ? fmt::format("Poisson, mean gap {} ms = {:g} steps of a full batch ({} ms)", ms(wo.mean_gap),
                                       cx.s.gap_steps, ms(full_step))
                         : std::string("all at time 0"));
  cx.figures["workload"] = {{"requests", requests.size()}, {"lengths", lengths}, {"median", median_len},
                            {"longest", sorted.back()}, {"total", total}, {"mean_gap_seconds", wo.mean_gap},
                            {"slots", cx.s.slots}};

  struct Row {
    std::string policy, source;
    PolicyRun run;
  };
  std::vector<Row> rows;
  for (Policy p : {Policy::static_batches, Policy::continuous}) {
    if (!cx.s.skip_real) rows.push_back({policy_name(p), "real", run_real(cx, p, requests, total)});
    rows.push_back({policy_name(p), "simulated", simulate(p, requests, cx.s.slots, cost)});
  }

  Table t(fmt::format("3. The workload with {} slots, static vs continuous batching ({})", cx.s.slots, cx.machine_line),
          {"policy", "run", "total (s)", "throughput (tokens/s)", "mean latency (s)", "p50 latency (s)", "p99 latency (s)",
           "mean TTFT (s)", "p50 TTFT (s)", "p99 TTFT (s)", "steps", "mean batch", "padding rows"});
  for (const Row& r : rows) {
    const ServeSummary& s = r.run.summary;
    t.add_row({r.policy, r.source, secs(s.total_seconds), fmt::format("{:.1f}", s.throughput), secs(s.mean_latency),
               secs(s.p50_latency), secs(s.p99_latency), secs(s.mean_ttft), secs(s.p50_ttft), secs(s.p99_ttft),
               std::to_string(s.steps), fmt::format("{:.2f}", s.mean_batch()), std::to_string(s.padding_rows)});
    cx.figures["workload_runs"].push_back({{"policy", r.policy}, {"run", r.source}, {"summary", summary_json(s)}});
  }
  const auto find = [&](const std::string& policy, const std::string& source) -> const Row* {
    for (const Row& r : rows)
      if (r.policy == policy && r.source == source) return &r;
    return nullptr;
  };
  for (const std::string source : {"real", "simulated"}) {
    const Row* st = find("static", source);
    const Row* co = find("continuous", source);
    if (st == nullptr || co == nullptr) continue;
    const ServeSummary &a = st->run.summary, &b = co->run.summary;
    t.add_row({"continuous ÷ static", source, times(b.total_seconds / a.total_seconds), times(b.throughput / a.throughput),
               times(b.mean_latency / a.mean_latency), times(b.p50_latency / a.p50_latency), times(b.p99_latency / a.p99_latency),
               times(b.mean_ttft / a.mean_ttft), times(b.p50_ttft / a.p50_ttft), times(b.p99_ttft / a.p99_ttft),
               times(static_cast<double>(b.steps) / static_cast<double>(a.steps)), "", ""});
    cx.figures["workload_ratios"][source] = {{"throughput", b.throughput / a.throughput},
                                             {"mean_latency_improvement", a.mean_latency / b.mean_latency}};
  }
  t.add_note(shape + ".");
  t.add_note("latency = handed back − arrival: under static batching a request is handed back when its whole batch ends; TTFT = "
             "end of the step that produced its first token − arrival (as if the server streamed).");
  t.add_note("static: the next 8 requests in arrival order, started when the last of them has arrived, run until the longest "
             "is done; finished members stay in the step as padding rows (computed, thrown away). continuous: a finished "
             "request leaves at once and the next arrived request takes its slot in the next step, its prefill in the same "
             "forward as the others' decode.");
  t.add_note("simulated: the same StaticBatcher and Scheduler code on a virtual clock, each step charged the sweep's time for its "
             "token count (prefill tokens priced like decode rows). The course: 1.6× throughput, over 10× mean latency.");
  emit(t, cx);

  // Both real runs are greedy by default: each request's tokens must not depend on the policy.
  const Row* st = find("static", "real");
  const Row* co = find("continuous", "real");
  if (st != nullptr && co != nullptr) {
    int same = 0;
    for (std::size_t i = 0; i < requests.size(); ++i) same += st->run.requests[i].tokens == co->run.requests[i].tokens;
    fmt::print("Each request's tokens under static and continuous batching: {} of {} identical{}\n\n", same, requests.size(),
               cx.o.sampling.temperature == 0 ? "" : " (sampled, each request with its own seeded sampler)");
    cx.figures["identical_tokens_across_policies"] = same;
    const Request& r0 = co->run.requests.front();
    fmt::print("request 0, \"{}\" → \"{}\"\n\n", cx.m.tokenizer.decode(r0.prompt), cx.m.tokenizer.decode(r0.tokens));
  }

  // Table 4: the requests that shared a batch with the longest one.
  const Row* sv = st != nullptr ? st : find("static", "simulated");
  const Row* cv = co != nullptr ? co : find("continuous", "simulated");
  const auto longest = std::max_element(requests.begin(), requests.end(),
                                        [](const Request& a, const Request& b) { return a.max_new_tokens < b.max_new_tokens; });
  const int batch_of_longest = static_cast<int>(longest - requests.begin()) / cx.s.slots;
  Table u(fmt::format("4. The static batch that holds the longest request ({} tokens), {} runs", longest->max_new_tokens, sv->source),
          {"request", "tokens", "arrival (s)", "static: TTFT (s)", "static: latency (s)", "continuous: TTFT (s)",
           "continuous: latency (s)", "static ÷ continuous latency"});
  for (int i = batch_of_longest * cx.s.slots; i < std::min<int>(static_cast<int>(requests.size()), (batch_of_longest + 1) * cx.s.slots); ++i) {
    const Request &a = sv->run.requests[static_cast<std::size_t>(i)], &b = cv->run.requests[static_cast<std::size_t>(i)];
    u.add_row({std::to_string(i), std::to_string(a.max_new_tokens), secs(a.arrival), secs(a.ttft()), secs(a.latency()),
               secs(b.ttft()), secs(b.latency()), times(a.latency() / b.latency())});
  }
  u.add_note("Under static batching every member is handed back with the longest; under continuous batching each leaves when it is "
             "done, and its slot serves the queue.");
  emit(u, cx);
}

// ---- table 5: the course's worked example ----

void worked_example(const Context& cx) {
  const LlamaConfig c13 = llama2_13b_config();
  const Machine h100 = h100_sxm();
  const DecodeShape mha = DecodeShape::of("Llama-2-13B, bf16", c13, 2, 2);
  LlamaConfig gqa_config = c13;
  gqa_config.n_kv_heads = 8;
  const DecodeShape gqa = DecodeShape::of("the same with 8 kv heads (GQA)", gqa_config, 2, 2);
  const double S = kLlama13bCachedTokens;
  Table t(fmt::format("5. The course's worked example: {} on an {} — {:.2f} B parameters, {} of weights, {} of cache per "
                      "sequence of {} tokens",
                      mha.name, h100.name, static_cast<double>(c13.parameter_count()) / 1e9, format_bytes(mha.weight_bytes),
                      format_bytes(S * mha.kv_bytes_per_token), kLlama13bCachedTokens),
          {"kv heads", "B", "memory (GB)", "fits in 80 GB", "latency (s/token)", "throughput (tokens/s)", "bound by"});
  for (const DecodeShape* shape : {&mha, &gqa}) {
    for (int B : {1, 16, 64, 128, 256}) {
      const StepModel m = model_decode_step(*shape, h100, B, S);
      t.add_row({shape == &mha ? "40 (MHA)" : "8 (GQA)", std::to_string(B), fmt::format("{:.1f}", m.resident_bytes / 1e9),
                 m.fits ? "yes" : "NO: out of memory", fmt::format("{:.4f}", m.latency), fmt::format("{:.1f}", m.throughput),
                 m.memory_bound() ? "memory" : "compute"});
      cx.figures["worked_example"].push_back({{"kv_heads", shape == &mha ? 40 : 8}, {"batch", B},
                                               {"memory_bytes", m.resident_bytes}, {"fits", m.fits},
                                               {"latency", m.latency}, {"throughput", m.throughput}});
    }
  }
  const double max_batch = std::floor((h100.memory_bytes - mha.weight_bytes) / (S * mha.kv_bytes_per_token));
  t.add_note("Parameters (the course's): S = 1024 cached tokens, D = 5120, F = 13824, N = 40 query heads, K = 40 kv heads (no GQA), "
             "H = 128, L = 40, V = 32000, untied embeddings, bf16 (2 B) weights and cache; H100 SXM: 3.35 TB/s HBM3, 989 TFLOP/s "
             "dense bf16 (balance 295), 80 GB.");
  t.add_note(fmt::format("memory = 2 B × parameters + B × 2 × S × K × H × L × 2 B; latency = memory / bandwidth (every byte read "
                         "once per step; the compute term is below it at every B here); throughput = B / latency. The largest "
                         "batch that fits is {:.0f}: by B = 256 the caches alone need {:.0f} GB.",
                         max_batch, 256 * S * mha.kv_bytes_per_token / 1e9));
  t.add_note("The course: 0.008 s/token and 124 tokens/s at B = 1; out of memory at B = 256, which fits once K = 8.");
  emit(t, cx);
}

// ---- the plot: throughput against latency per batch size ----

void write_plot(const Context& cx, const std::vector<SweepPoint>& sweep, const std::vector<StepModel>& model) {
  if (cx.s.plot_path.empty()) return;
  LinePlot plot(fmt::format("Throughput vs latency, B = {} … {} ({})", sweep.front().batch, sweep.back().batch, cx.machine_line),
                "step latency (ms); one point per batch size, B = 1, 2, 4, … from left to right",
                "throughput (tokens/s)");
  plot.set_log_x(true);
  std::vector<double> mx, my, ax, ay;
  for (const SweepPoint& p : sweep) {
    mx.push_back(p.seconds * 1e3);
    my.push_back(p.throughput());
  }
  for (const StepModel& m : model) {
    ax.push_back(m.latency * 1e3);
    ay.push_back(m.throughput);
  }
  plot.add_series("measured", mx, my);
  plot.add_series("analytic model (roofline)", ax, ay);
  plot.write(cx.s.plot_path);
  fmt::print("plot written to {}\n\n", cx.s.plot_path);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Chapter 04: batching — the batch-size knee, static vs continuous batching, the latency/throughput model"};
  CommonOptions o;
  Settings s;
  s.plot_path = "ch04_throughput_vs_latency.svg";  // in the working directory, never over docs/
  add_common_options(app, o, PromptFlags::absent);  // the workload brings its own prompts
  app.add_option("--slots", s.slots, "batch slots for the workload (static batch size, continuous slots)")
      ->check(whole_number(1, 64))->capture_default_str();
  app.add_option("--requests", s.requests, "requests in the workload (the real runs take most of the time)")
      ->check(whole_number(1, 4096))->capture_default_str();
  app.add_option("--gap-steps", s.gap_steps, "mean gap between arrivals, in full-batch decode steps (0: all at time 0)")
      ->check(real_number(0.0, 1e6))->capture_default_str();
  app.add_option("--cached", s.cached, "cache length of every sequence in the batch sweep")
      ->check(whole_number(1, 4096))->capture_default_str();
  app.add_option("--repeats", s.repeats, "timed repeats per measurement (the median is reported)")
      ->check(whole_number(1))->capture_default_str();
  app.add_flag("--skip-real", s.skip_real, "simulate the workload only (no real runs)");
  app.add_option("--plot", s.plot_path, "SVG file for the throughput-vs-latency plot (empty: none)")->capture_default_str();

  return run_main(app, argc, argv, [&] {
    check_output_path(s.plot_path, "--plot");
    LoadedModel m = load_model(o);
    if (s.cached + 1 > m.model.config().context_length)
      throw UsageError(fmt::format("--cached {} leaves no room in the context of {}", s.cached, m.model.config().context_length));
    RunRecord record = new_record("ch04_batching", o, "tables");

    const BandwidthResult bw = measure_read_bandwidth();
    const double peak = measure_peak_flops(s.repeats);
    Context cx{m, o, s, record.figures, Machine{"this machine", bw.bytes_per_second, peak, 0},
               fmt::format("{} threads, read bandwidth {:.1f} GB/s", num_threads(), bw.bytes_per_second / 1e9)};
    record.figures["machine"] = {{"threads", num_threads()}, {"read_bandwidth_bytes_per_s", bw.bytes_per_second},
                                 {"sgemm_flops_per_s", peak}};

    const std::vector<SweepPoint> sweep = batch_sweep(cx, {1, 2, 4, 8, 16, 32, 64});
    sweep_table(cx, sweep);
    const std::vector<StepModel> model = model_table(cx, sweep);
    workload_tables(cx, sweep);
    worked_example(cx);
    write_plot(cx, sweep, model);
    save_record(record, o, nullptr);
  });
}
