#include "model_drafter.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace infer {

ModelDrafter::ModelDrafter(std::string name, Llama model, int64_t capacity, SamplingParams sampling)
    : name_(std::move(name)), model_(std::move(model)), cache_(model_.config(), capacity, model_.device()),
      sampler_(sampling) {}

Draft ModelDrafter::propose(std::span<const int32_t> context, int gamma) {
  Draft draft;
  if (gamma <= 0 || context.empty()) return draft;
  // Roll back to the longest prefix of `context` the cache already holds; at least the last
  // token must be fed again, to get the distribution that follows it.
  int64_t keep = 0;
  while (keep < std::ssize(fed_) && keep + 1 < std::ssize(context) && fed_[keep] == context[keep]) ++keep;
  fed_.resize(keep);
  cache_.truncate(keep);
  std::vector<int32_t> feed(context.begin() + keep, context.end());

  const bool greedy = sampler_.params().temperature == 0.0f;
  // The repetition penalty's history, as the target's sampler will count it: the sequence so
  // far, then each guess (the draft's own sampler remembers nothing between rounds).
  const std::size_t window = static_cast<std::size_t>(std::max(sampler_.params().repeat_last_n, 0));
  std::vector<int32_t> seen(sampler_.params().repeat_last_n < 0 || context.size() < window
                                ? context.begin() : context.end() - static_cast<std::ptrdiff_t>(window),
                            context.end());
  for (int i = 0; i < gamma; ++i) {
    const Tensor logits = model_.forward(feed, std::ssize(fed_), cache_).to(Device::cpu());
    fed_.insert(fed_.end(), feed.begin(), feed.end());
    const std::span<const float> row(logits.host<float>(), logits.numel());
    std::vector<float> q = sampler_.distribution_after(row, seen);  // one-hot at temperature 0
    draft.tokens.push_back(greedy ? argmax(q) : sampler_.draw(q));
    if (!greedy) draft.q.push_back(std::move(q));  // greedy: q one-hot, no list needed
    seen.push_back(draft.tokens.back());
    feed.assign(1, draft.tokens.back());
  }
  return draft;
}

namespace {

// A Linear that forwards to another one it does not own: how the layer-skip draft shares the
// target's matrices.
class SharedLinear : public Linear {
 public:
  explicit SharedLinear(const Linear& inner) : inner_(inner) {}
  void forward(const Tensor& x, Tensor& y) const override { inner_.forward(x, y); }
  int64_t in_features() const override { return inner_.in_features(); }
  int64_t out_features() const override { return inner_.out_features(); }
  std::size_t weight_bytes() const override { return inner_.weight_bytes(); }
  std::string storage() const override { return inner_.storage(); }

 private:
  const Linear& inner_;
};

std::unique_ptr<Linear> share(const std::unique_ptr<Linear>& layer) { return std::make_unique<SharedLinear>(*layer); }

}  // namespace

Llama first_layers(const Llama& model, int k) {
  const LlamaWeights& W = model.weights();
  if (k < 1 || k > model.config().n_layers)
    throw std::invalid_argument(fmt::format("first_layers: k = {} outside 1…{}", k, model.config().n_layers));
  LlamaConfig config = model.config();
  config.n_layers = k;
  LlamaWeights w;
  w.token_embedding = W.token_embedding;  // shared, not copied
  for (int l = 0; l < k; ++l) {
    const LayerWeights& L = W.layers[l];
    w.layers.push_back({L.attn_norm, share(L.wq), share(L.wk), share(L.wv), share(L.wo), L.ffn_norm,
                        share(L.w_gate), share(L.w_up), share(L.w_down)});
  }
  w.output_norm = W.output_norm;
  w.output = share(W.output);
  return Llama(config, std::move(w), model.device());
}

}  // namespace infer
