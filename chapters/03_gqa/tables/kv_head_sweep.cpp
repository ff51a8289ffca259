#include "kv_head_sweep.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "02_kv_cache/repeat_heads.hpp"
#include "app/table_context.hpp"  // machine_line
#include "measure/progress.hpp"
#include "measure/table.hpp"
#include "measure/timing.hpp"
#include "multi_query.hpp"

namespace infer::gqa {

Tensor repeat_head_rows(const Tensor& w, int n_heads, int repeats) {
  if (w.rank() != 2 || n_heads <= 0 || repeats <= 0 || w.dim(0) % n_heads != 0)
    throw std::invalid_argument(fmt::format("repeat_head_rows: cannot repeat {} heads of a {} matrix {} times", n_heads,
                                            shape_string(w.shape()), repeats));
  // Seen as one row, w holds n_heads "heads" of D·in elements each: chapter 02's repeat_heads.
  Tensor out({w.dim(0) * repeats, w.dim(1)}, w.dtype(), w.device());
  Tensor flat = out.reshape({1, out.numel()});
  ops::repeat_heads(w.reshape({1, w.numel()}), n_heads, repeats, flat);
  return out;
}

Llama with_kv_heads(const Llama& model, int kv_heads) {
  LlamaConfig c = model.config();
  if (kv_heads > 0 && c.n_kv_heads % kv_heads == 0) return pool_kv_heads(model, kv_heads);
  if (kv_heads <= 0 || kv_heads % c.n_kv_heads != 0 || c.n_heads % kv_heads != 0)
    throw std::invalid_argument(fmt::format("with_kv_heads: {} key/value heads of a model with {} (and {} query heads)", kv_heads,
                                            c.n_kv_heads, c.n_heads));
  LlamaWeights weights = share_weights(model.weights());  // every layer dense, or it throws
  const int repeats = kv_heads / c.n_kv_heads;
  for (LayerWeights& L : weights.layers) {
    L.wk = std::make_unique<DenseLinear>(repeat_head_rows(dynamic_cast<const DenseLinear&>(*L.wk).weight(), c.n_kv_heads, repeats));
    L.wv = std::make_unique<DenseLinear>(repeat_head_rows(dynamic_cast<const DenseLinear&>(*L.wv).weight(), c.n_kv_heads, repeats));
  }
  c.n_kv_heads = kv_heads;
  return Llama(c, std::move(weights), model.device());
}

std::vector<int> kv_head_counts(const LlamaConfig& c) {
  std::vector<int> counts;
  for (int n = 1; n <= c.n_heads; ++n)
    if (c.n_heads % n == 0 && (c.n_kv_heads % n == 0 || n % c.n_kv_heads == 0)) counts.push_back(n);
  return counts;
}

void fill_positions(GroupedKvCache& cache, const LlamaConfig& c, int64_t positions, Device device) {
  if (cache.length() != 0 || positions < 1 || positions > cache.max_tokens())
    throw std::invalid_argument(fmt::format("fill_positions: {} positions into a cache of {} holding {}", positions,
                                            cache.max_tokens(), cache.length()));
  std::mt19937 rng(static_cast<unsigned>(positions));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> values(static_cast<std::size_t>(positions * c.kv_width()));
  for (float& x : values) x = normal(rng);
  const Tensor kv = Tensor::from_vector(values, {positions, c.kv_width()}, device);  // keys and values alike
  const Tensor q = Tensor::zeros({1, c.q_width()}, DType::f32, device);
  Tensor out({1, c.q_width()}, DType::f32, device);
  for (int l = 0; l < c.n_layers; ++l) cache.attend(l, 0, q, kv, kv, out);
}

Sweep time_kv_head_sweep(const Llama& model, const std::vector<int64_t>& contexts, int rounds) {
  std::vector<Llama> variants;
  for (int n : kv_head_counts(model.config())) variants.push_back(with_kv_heads(model, n));
  const ReadBandwidthProbe probe;
  const int32_t token = 1;  // any token: a step's time does not depend on which
  Sweep sweep{.points = {}, .bandwidth = {}, .rounds = rounds};
  std::vector<double> read_seconds;
  std::fflush(stdout);  // the progress bar draws on stderr
  ProgressBar bar("decode steps by kv heads", std::ssize(contexts) * (rounds + 1));
  for (int64_t C : contexts) {
    std::vector<std::unique_ptr<GroupedKvCache>> caches;
    std::vector<std::function<void()>> work{[&] { probe.read_once(); }};
    for (const Llama& v : variants) {
      caches.push_back(std::make_unique<GroupedKvCache>(v.config(), C, v.device()));
      fill_positions(*caches.back(), v.config(), C - 1, v.device());
      // The step at position C − 1: it writes its own slot again and reads all C positions.
      work.emplace_back([&v, &cache = *caches.back(), C, token] {
        cache.truncate(C - 1);
        (void)v.forward(std::span<const int32_t>(&token, 1), C - 1, cache).to(Device::cpu());
      });
    }
    const std::vector<double> medians = medians_in_turn(rounds, work, [&] { bar.advance(); });
    read_seconds.push_back(medians[0]);
    for (std::size_t i = 0; i < variants.size(); ++i) {
      const LlamaConfig& vc = variants[i].config();
      sweep.points.push_back({vc.n_kv_heads, C, medians[i + 1], static_cast<double>(variants[i].weights().bytes_per_token()),
                              static_cast<double>(C) * static_cast<double>(vc.kv_bytes_per_token(4))});
    }
  }
  bar.done();
  sweep.bandwidth = probe.result(median(read_seconds));
  return sweep;
}

// --- 9. the table ---

void kv_head_sweep_table(const Llama& model, const CommonOptions& o, const std::vector<int64_t>& contexts, nlohmann::json& figures) {
  constexpr int kRounds = 7;
  const LlamaConfig& c = model.config();
  const Sweep sweep = time_kv_head_sweep(model, contexts, kRounds);
  std::string counts;
  for (int n : kv_head_counts(c)) counts += (counts.empty() ? "" : ", ") + std::to_string(n);
  Table table(fmt::format("9. One decode step against the number of key/value heads, the GQA paper's figure on this model's kernels: "
                          "H_kv = {} of {} query heads, fp32 cache ({})", counts, c.n_heads, machine_line(sweep.bandwidth)),
              {"kv heads", "positions read", "weights read", "K/V cache read", "cache / weights", "step (ms)",
               fmt::format("vs {} kv heads", c.n_kv_heads), "weights + cache (GB/s)", "of read bandwidth"});
  for (const SweepPoint& p : sweep.points) {
    const auto same_context = [&](const SweepPoint& q) { return q.context == p.context && q.kv_heads == c.n_kv_heads; };
    const SweepPoint& base = *std::find_if(sweep.points.begin(), sweep.points.end(), same_context);
    const double rate = (p.weight_bytes + p.cache_bytes) / p.seconds;
    table.add_row({std::to_string(p.kv_heads), std::to_string(p.context), format_bytes(p.weight_bytes), format_bytes(p.cache_bytes),
                   fmt::format("{:.2f}", p.cache_bytes / p.weight_bytes), cell::ms(p.seconds), cell::times(p.seconds / base.seconds),
                   fmt::format("{:.1f}", rate / 1e9), cell::percent(rate / sweep.bandwidth.bytes_per_second, 0)});
    figures["kv_head_sweep"].push_back({{"kv_heads", p.kv_heads}, {"context", p.context}, {"seconds", p.seconds},
                                        {"weight_bytes", p.weight_bytes}, {"cache_bytes", p.cache_bytes}});
  }
  figures["kv_head_sweep_bandwidth"] = sweep.bandwidth.bytes_per_second;
  table.add_note(fmt::format("Medians of {} rounds; in each round every variant takes one step in turn, beside one pass of the "
                             "read-bandwidth probe. The step sits at position C − 1 and reads C positions: C − 1 written beforehand "
                             "(seeded random keys and values; attention's time does not depend on the numbers) and its own.", kRounds));
  table.add_note(fmt::format("{} kv heads is the model; fewer are chapter 03's mean-pooling (table 3: the outputs are ruined), more "
                             "repeat each head for the query heads that read it (the same outputs). Only wk and wv change in the "
                             "weights; the cache read is C × 2 × {} layers × H_kv × {} × 4 B.", c.n_kv_heads, c.n_layers, c.head_dim));
  table.emit(o.csv_path);
}

}  // namespace infer::gqa
