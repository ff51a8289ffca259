#include "batch_sweep.hpp"

#include <cmath>

#include <fmt/format.h>

#include "measure/progress.hpp"
#include "measure/svg_plot.hpp"

namespace infer::batching {
namespace {

DecodeShape own_shape(const Context& cx) {
  const LlamaConfig& c = cx.m.model.config();
  DecodeShape s = DecodeShape::of("this model, fp32", c, 4, 4);
  s.weight_bytes = static_cast<double>(cx.m.model.weights().bytes_per_token());  // what a step really reads
  return s;
}

}  // namespace

// ---- table 1: the batch sweep ----

std::vector<SweepPoint> batch_sweep(const Context& cx, const std::vector<int>& batches) {
  const std::vector<int32_t> text = cx.m.tokenizer.encode(
      "Many requests share one step: the weights are read once and serve every sequence in the "
      "batch, while each sequence attends only to its own cache of keys and values. ");
  ProgressBar bar("batch sweep: prefilling caches, then timing steps",
                  (batches.back() + kSweepPrefillGroup - 1) / kSweepPrefillGroup + cx.s.repeats + 1);
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
  const bool has_knee = knee + 1 < p.size();  // the last B's doubling still paid: no knee within the sweep
  Table t(fmt::format("1. Batch sweep: B sequences, each holding a {}-token cache, decode one token in one step ({}, median of {})",
                      cx.s.cached, cx.machine_line, cx.s.repeats),
          {"B", "step latency (ms)", "latency × B=1", "throughput (tokens/s)", "throughput × B=1",
           "from B/2: throughput", "from B/2: latency", ""});
  for (std::size_t i = 0; i < p.size(); ++i) {
    const bool has_prev = i > 0;
    t.add_row({std::to_string(p[i].batch), cell::ms(p[i].seconds, 1), cell::times(p[i].seconds / p[0].seconds),
               fmt::format("{:.1f}", p[i].throughput()), cell::times(p[i].throughput() / p[0].throughput()),
               has_prev ? fmt::format("{:+.0f}%", 100 * (p[i].throughput() / p[i - 1].throughput() - 1)) : "",
               has_prev ? cell::times(p[i].seconds / p[i - 1].seconds) : "", has_knee && i == knee ? "← knee" : ""});
    cx.figures["sweep"].push_back({{"batch", p[i].batch}, {"seconds", p[i].seconds}, {"throughput", p[i].throughput()}});
  }
  const SweepPoint& k = p[knee];
  if (has_knee) {
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
  cx.figures["knee"] = has_knee ? nlohmann::json(k.batch) : nlohmann::json();  // null: no knee up to the largest B
  cx.emit(t);
}

// ---- table 2: the analytic model beside the sweep ----

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
               fmt::format("{:.2f}", m.flops / 1e9), cell::ms(m.latency, 1), m.memory_bound() ? "memory" : "compute",
               fmt::format("{:.1f}", m.throughput), cell::ms(pt.seconds, 1), fmt::format("{:.1f}", pt.throughput()),
               cell::times(pt.seconds / m.latency)});
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
  cx.emit(t);
  return rows;
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
  plot.add_series("analytic model (roofline)", ax, ay, {.color = 0, .dashed = true});
  plot.write(cx.s.plot_path);
  fmt::print("plot written to {}\n\n", cx.s.plot_path);
}

}  // namespace infer::batching
