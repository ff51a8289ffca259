#include "speedup.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>

#include "02_kv_cache/cached_generate.hpp"
#include "03_gqa/grouped_kv_cache.hpp"
#include "measure/progress.hpp"
#include "measure/timing.hpp"

namespace infer::spec {

double expected_tokens(double alpha, double gamma) {
  if (alpha >= 1.0) return gamma + 1.0;
  return (1.0 - std::pow(alpha, gamma + 1)) / (1.0 - alpha);
}

double predicted_speedup(double alpha, double gamma, double c, double verify_cost) {
  return expected_tokens(alpha, gamma) / (gamma * c + verify_cost);
}

double MeasuredCosts::verify_at(double gamma) const {
  if (verify.empty()) return 1.0;
  const double g = std::clamp(gamma, 0.0, static_cast<double>(verify.size() - 1));
  const auto lo = static_cast<std::size_t>(std::floor(g));
  const std::size_t hi = std::min(lo + 1, verify.size() - 1);
  return verify[lo] + (g - static_cast<double>(lo)) * (verify[hi] - verify[lo]);
}

MeasuredCosts measure_costs(Llama& target, std::span<const int32_t> context, int max_gamma,
                            std::span<Drafter* const> drafters, int gamma, int repeats) {
  MeasuredCosts costs;
  costs.context = std::ssize(context);
  GroupedKvCache cache(target.config(), costs.context + max_gamma + 1, target.device());
  target.forward(context, 0, cache);  // fill the cache once; every timed pass starts at the same length
  const std::vector<int32_t> next(max_gamma + 1, context.back());
  std::vector<std::function<void()>> work;
  for (int g = 0; g <= max_gamma; ++g)  // g = 0: a decode step (one position, its logits only)
    work.push_back([&, g] {
      cache.truncate(costs.context);
      target.forward(std::span(next).first(g + 1), costs.context, cache, /*all_logits=*/g > 0).to(Device::cpu());
    });
  // A drafter keeps the longest prefix of `context` it holds: each call re-feeds the last token
  // and makes `gamma` guesses (the warm-up round fills its cache).
  for (Drafter* d : drafters) work.push_back([&, d] { d->propose(context, gamma); });
  const std::vector<double> seconds = medians_in_turn(repeats, work);
  costs.decode_seconds = seconds[0];
  for (int g = 0; g <= max_gamma; ++g) costs.verify.push_back(g == 0 ? 1.0 : seconds[g] / seconds[0]);
  for (std::size_t i = 0; i < drafters.size(); ++i)
    costs.c.push_back(seconds[max_gamma + 1 + i] / gamma / seconds[0]);
  return costs;
}

std::vector<Timed> time_configs(LoadedModel& m, std::span<const Config> configs, const std::vector<int32_t>& prompt,
                                int n_predict, const SamplingParams& sampling, int repeats, const std::string& label) {
  const LlamaConfig& c = m.model.config();
  std::vector<Timed> out(configs.size());
  std::vector<std::unique_ptr<GroupedKvCache>> caches;  // one per configuration, emptied before each run
  std::vector<std::function<void()>> work;
  ProgressBar progress(label, std::ssize(configs) * (repeats + 1));
  for (std::size_t i = 0; i < configs.size(); ++i) {
    caches.push_back(std::make_unique<GroupedKvCache>(c, std::ssize(prompt) + n_predict + configs[i].gamma + 1,
                                                      m.model.device()));
    work.push_back([&, i] {
      const Config& cfg = configs[i];
      GroupedKvCache& cache = *caches[i];
      cache.clear();
      Sampler sampler(sampling);
      std::vector<int32_t> tokens;
      if (cfg.drafter == nullptr) {
        const GenerateOptions options{.n_predict = n_predict, .stop_at_end = false, .top_logits = 0};
        for (const StepRecord& s : generate_cached(m.model, m.tokenizer, prompt, cache, sampler, options).steps)
          tokens.push_back(s.token);
      } else {
        const SpeculativeOptions options{.gamma = cfg.gamma, .n_predict = n_predict, .stop_at_end = false, .top_logits = 0};
        const SpeculativeGeneration g =
            generate_speculative(m.model, cache, *cfg.drafter, m.tokenizer, prompt, sampler, options);
        for (const StepRecord& s : g.steps) tokens.push_back(s.token);
        out[i].stats = g.stats;
      }
      out[i].tokens = std::move(tokens);
      progress.advance();
    });
  }
  const std::vector<double> seconds = medians_in_turn(repeats, work);
  for (std::size_t i = 0; i < configs.size(); ++i) out[i].seconds = seconds[i];
  return out;
}

double predicted_for(const SpeculativeStats& stats, double c, const MeasuredCosts& costs) {
  if (stats.guessing_rounds == 0) return 1.0;
  const double f = static_cast<double>(stats.guessing_rounds) / static_cast<double>(stats.rounds);
  const double gamma = static_cast<double>(stats.drafted) / static_cast<double>(stats.guessing_rounds);
  const double tokens = (1 - f) + f * expected_tokens(stats.alpha(), gamma);
  const double cost = (1 - f) + f * (gamma * c + costs.verify_at(gamma));
  return tokens / cost;
}

}  // namespace infer::spec
