#include "measure.hpp"

#include <algorithm>
#include <cmath>

#include "analytic.hpp"
#include "02_kv_cache/cached_generate.hpp"
#include "03_gqa/grouped_kv_cache.hpp"
#include "measure/progress.hpp"
#include "measure/timing.hpp"

namespace infer::spec {

double TargetCosts::verify_at(double gamma) const {
  if (verify.empty()) return 1.0;
  const double g = std::clamp(gamma, 0.0, static_cast<double>(verify.size() - 1));
  const auto lo = static_cast<std::size_t>(std::floor(g));
  const std::size_t hi = std::min(lo + 1, verify.size() - 1);
  return verify[lo] + (g - static_cast<double>(lo)) * (verify[hi] - verify[lo]);
}

TargetCosts measure_target_costs(Llama& target, std::span<const int32_t> context, int max_gamma, int repeats) {
  TargetCosts costs;
  costs.context = std::ssize(context);
  GroupedKvCache cache(target.config(), costs.context + max_gamma + 1, target.device());
  target.forward(context, 0, cache);  // fill the cache once; every timed pass starts at the same length
  const std::vector<int32_t> next(max_gamma + 1, context.back());
  auto pass = [&](int gamma, bool all_logits) {
    return median_seconds(repeats, [&] {
      cache.truncate(costs.context);
      target.forward(std::span(next).first(gamma + 1), costs.context, cache, all_logits)
          .to(Device::cpu());
    });
  };
  costs.decode_seconds = pass(0, false);
  costs.verify.push_back(1.0);
  for (int g = 1; g <= max_gamma; ++g) costs.verify.push_back(pass(g, true) / costs.decode_seconds);
  return costs;
}

double measure_draft_seconds(Drafter& drafter, std::span<const int32_t> context, int gamma, int repeats) {
  drafter.propose(context, gamma);  // a drafter with a model fills its cache here, once
  return median_seconds(repeats, [&] { drafter.propose(context, gamma); }) / gamma;
}

std::vector<Timed> time_configs(LoadedModel& m, std::span<const Config> configs, const std::vector<int32_t>& prompt,
                                int n_predict, const SamplingParams& sampling, int repeats, const std::string& label) {
  const LlamaConfig& c = m.model.config();
  std::vector<std::vector<double>> seconds(configs.size());
  std::vector<Timed> out(configs.size());
  ProgressBar progress(label, std::ssize(configs) * repeats);
  for (int r = 0; r < repeats; ++r) {
    for (std::size_t i = 0; i < configs.size(); ++i) {
      const Config& cfg = configs[i];
      GroupedKvCache cache(c, std::ssize(prompt) + n_predict + cfg.gamma + 1, m.model.device());
      Sampler sampler(sampling);
      Stopwatch clock;
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
      seconds[i].push_back(clock.seconds());
      out[i].tokens = std::move(tokens);
      progress.advance();
    }
  }
  for (std::size_t i = 0; i < configs.size(); ++i) out[i].seconds = median(seconds[i]);
  return out;
}

double predicted_for(const SpeculativeStats& stats, double c, const TargetCosts& costs) {
  if (stats.guessing_rounds == 0) return 1.0;
  const double f = static_cast<double>(stats.guessing_rounds) / static_cast<double>(stats.rounds);
  const double gamma = static_cast<double>(stats.drafted) / static_cast<double>(stats.guessing_rounds);
  const double tokens = (1 - f) + f * expected_tokens(stats.alpha(), gamma);
  const double cost = (1 - f) + f * (gamma * c + costs.verify_at(gamma));
  return tokens / cost;
}

}  // namespace infer::spec
