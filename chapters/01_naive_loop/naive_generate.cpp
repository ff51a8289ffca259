#include "naive_generate.hpp"

#include <stdexcept>

#include "forward_cost.hpp"
#include "measure/timing.hpp"
#include "tensor/ops.hpp"

namespace infer {

// the-change: begin NoCache::attend
void NoCache::attend(int, int64_t pos0, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) {
  if (pos0 != 0) throw std::logic_error("NoCache: every pass must start at position 0");
  ops::attention(q, k, v, n_heads_, n_kv_heads_, 0, out);
}
// the-change: end NoCache::attend

// the-change: begin generate_naive
Generation generate_naive(Llama& model, const Tokenizer& tokenizer, std::vector<int32_t> tokens,
                          Sampler& sampler, const GenerateOptions& options,
                          const std::function<void(const StepRecord&)>& on_token) {
  NoCache no_cache(model.config());
  Generation gen;
  for (int step = 0; step < options.n_predict; ++step) {
    reset_op_counters();
    Stopwatch clock;
    // The whole sequence, every time: positions 0 … T-1, logits for the last one only.
    const Tensor logits = model.forward(tokens, 0, no_cache).to(Device::cpu());
    const std::span<const float> last(logits.host<float>(), logits.numel());
    const int32_t next = sampler.sample(last);
    StepRecord record{next, top_logits(last, options.top_logits), clock.seconds()};

    const auto seq_len = std::ssize(tokens);
    gen.costs.push_back({seq_len, 0, op_counters().total(), forward_cost(model.config(), seq_len, 0, 1).total()});
    gen.steps.push_back(record);
    if (on_token) on_token(record);
    tokens.push_back(next);
    if (options.stop_at_end && tokenizer.ends_generation(next)) break;
  }
  return gen;
}
// the-change: end generate_naive

}  // namespace infer
