#include "cache_layout.hpp"

#include <cstdio>
#include <functional>
#include <memory>
#include <span>
#include <string>

#include <fmt/format.h>

#include "app/table_context.hpp"  // machine_line
#include "kv_head_sweep.hpp"      // fill_positions
#include "measure/progress.hpp"
#include "measure/table.hpp"
#include "measure/timing.hpp"
#include "timed_store.hpp"

namespace infer::gqa {

namespace {
const char* layout_name(KvLayout layout) {
  return layout == KvLayout::head_major ? "head by head [H_kv, C, D]" : "position by position [C, H_kv·D]";
}
}  // namespace

LayoutSweep time_cache_layouts(const Llama& model, const std::vector<int64_t>& contexts, int rounds) {
  const LlamaConfig& c = model.config();
  const ReadBandwidthProbe probe;
  const int32_t token = 1;  // any token: a step's time does not depend on which
  LayoutSweep sweep{.points = {}, .bandwidth = {}, .rounds = rounds};
  std::vector<double> read_seconds;
  std::fflush(stdout);  // the progress bar draws on stderr
  ProgressBar bar("decode steps by cache layout", std::ssize(contexts) * (rounds + 1));
  for (const int64_t C : contexts) {
    const KvLayout layouts[] = {KvLayout::position_major, KvLayout::head_major};
    std::vector<std::unique_ptr<GroupedKvCache>> caches;
    std::vector<std::unique_ptr<TimedStore>> timed;
    std::vector<std::vector<double>> attention_seconds(std::size(layouts));
    std::vector<std::function<void()>> work{[&] { probe.read_once(); }};
    for (std::size_t i = 0; i < std::size(layouts); ++i) {
      caches.push_back(std::make_unique<GroupedKvCache>(c, C, model.device(), layouts[i]));
      fill_positions(*caches.back(), c, C - 1, model.device());  // the same seeded numbers in both
      timed.push_back(std::make_unique<TimedStore>(*caches.back()));
      // The step at position C − 1: it writes its own slot again and reads all C positions.
      work.emplace_back([&, i, C] {
        caches[i]->truncate(C - 1);
        (void)model.forward(std::span<const int32_t>(&token, 1), C - 1, *timed[i]).to(Device::cpu());
        attention_seconds[i].push_back(timed[i]->take_seconds());
      });
    }
    const std::vector<double> medians = medians_in_turn(rounds, work, [&] { bar.advance(); });
    read_seconds.push_back(medians[0]);
    for (std::size_t i = 0; i < std::size(layouts); ++i) {
      attention_seconds[i].erase(attention_seconds[i].begin());  // the warm-up round
      sweep.points.push_back({layouts[i], C, medians[i + 1], median(attention_seconds[i]),
                              static_cast<double>(C) * static_cast<double>(c.kv_bytes_per_token(4))});
    }
  }
  bar.done();
  sweep.bandwidth = probe.result(median(read_seconds));
  return sweep;
}

void cache_layout_table(const Llama& model, const CommonOptions& o, const std::vector<int64_t>& contexts,
                        nlohmann::json& figures) {
  constexpr int kRounds = 7;
  const LlamaConfig& c = model.config();
  const LayoutSweep sweep = time_cache_layouts(model, contexts, kRounds);
  const double bandwidth = sweep.bandwidth.bytes_per_second;
  Table table(fmt::format("10. One decode step against the context, the grouped cache stored position by position or head by "
                          "head: the step split into attention and the rest ({})",
                          machine_line(sweep.bandwidth)),
              {"positions read", "cache layout", "K/V cache read", "step (ms)", "attention (ms)", "rest (ms)",
               "attention's share", "cache read (GB/s)", "of read bandwidth", "attention vs by position"});
  for (std::size_t i = 0; i < sweep.points.size(); ++i) {
    const LayoutPoint& p = sweep.points[i];
    const LayoutPoint& by_position = sweep.points[i - i % 2];  // each context's pair: position by position first
    const double rate = p.cache_bytes / p.attention_seconds;
    table.add_row({std::to_string(p.context), layout_name(p.layout), format_bytes(p.cache_bytes), cell::ms(p.step_seconds),
                   cell::ms(p.attention_seconds), cell::ms(p.step_seconds - p.attention_seconds),
                   cell::percent(p.attention_seconds / p.step_seconds, 0), fmt::format("{:.1f}", rate / 1e9),
                   cell::percent(rate / bandwidth, 0), cell::times(by_position.attention_seconds / p.attention_seconds)});
    figures["cache_layout"].push_back({{"layout", p.layout == KvLayout::head_major ? "head_major" : "position_major"},
                                       {"context", p.context},
                                       {"step_seconds", p.step_seconds},
                                       {"attention_seconds", p.attention_seconds},
                                       {"cache_bytes", p.cache_bytes}});
  }
  figures["cache_layout_bandwidth"] = bandwidth;
  table.add_note(fmt::format("Medians of {} rounds; in each round both layouts take one step in turn, beside one pass of the "
                             "read-bandwidth probe. The step sits at position C − 1 and reads C positions: C − 1 written beforehand "
                             "(the same seeded random keys and values in both caches) and its own.", kRounds));
  table.add_note("attention: the seconds inside the step spent in the cache's attend (the step's k, v written, then the kernel), "
                 "summed over the layers; rest: everything else, mostly streaming the weights, which does not grow with C.");
  table.add_note(fmt::format("cache read: the keys and values attention reads, C × 2 × {} layers × {} heads × {} × 4 B, per second of "
                             "attention. Both layouts give the same bits (tests/unit/test_cpu_attention.cpp).",
                             c.n_layers, c.n_kv_heads, c.head_dim));
  table.emit(o.csv_path);
}

}  // namespace infer::gqa
