#include "cached_generate.hpp"

#include "01_naive_loop/forward_cost.hpp"
#include "measure/timing.hpp"
#include "tensor/ops.hpp"

namespace infer {

// the-change: begin generate_cached
Generation generate_cached(Llama& model, const Tokenizer& tokenizer, const std::vector<int32_t>& prompt,
                           KvStore& cache, Sampler& sampler, const GenerateOptions& options,
                           const std::function<void(const StepRecord&)>& on_token) {
  Generation gen;
  std::vector<int32_t> feed = prompt;  // prefill feeds the prompt; each decode step one token
  int64_t pos = 0;                     // position of feed[0]
  for (int step = 0; step < options.n_predict; ++step) {
    reset_op_counters();
    Stopwatch clock;
    // the-change: begin decode_step
    const Tensor logits = model.forward(feed, pos, cache).to(Device::cpu());
    const std::span<const float> last(logits.host<float>(), logits.numel());
    const int32_t next = sampler.sample(last);
    // the-change: end decode_step
    StepRecord record{next, top_logits(last, options.top_logits), clock.seconds()};

    const auto n_new = std::ssize(feed);
    gen.costs.push_back({n_new, pos, op_counters().total(), forward_cost(model.config(), n_new, pos, 1).total()});
    gen.steps.push_back(record);
    if (on_token) on_token(record);
    pos += n_new;
    feed.assign(1, next);
    if (options.stop_at_end && tokenizer.ends_generation(next)) break;
  }
  return gen;
}
// the-change: end generate_cached

}  // namespace infer
