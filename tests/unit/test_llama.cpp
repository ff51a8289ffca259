// Llama::forward and forward_batch on a tiny random model: the batched pass gives each sequence
// what its own pass gives, and its public steps (embed, layer, logits) are the pass bit for bit.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <random>
#include <stdexcept>
#include <vector>

#include "catch_compat.hpp"

#include "model/llama.hpp"
#include "tensor/ops.hpp"

using namespace infer;

namespace {

LlamaConfig tiny_config() {
  LlamaConfig c;
  c.n_layers = 3, c.d_model = 16, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 4, c.d_ff = 24;
  c.vocab_size = 40, c.context_length = 32, c.tied_embeddings = true;
  return c;
}

Tensor random_tensor(Shape shape, std::mt19937& rng, float scale) {
  std::normal_distribution<float> normal(0.0f, scale);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  std::vector<float> values(static_cast<std::size_t>(n));
  for (float& v : values) v = normal(rng);
  return Tensor::from_vector(values, std::move(shape));
}

Llama tiny_model() {
  const LlamaConfig c = tiny_config();
  std::mt19937 rng(7);
  auto linear = [&](int64_t out, int64_t in) { return std::make_unique<DenseLinear>(random_tensor({out, in}, rng, 0.3f)); };
  LlamaWeights w;
  const Tensor embedding = random_tensor({c.vocab_size, c.d_model}, rng, 1.0f);
  w.token_embedding = std::make_shared<DenseEmbedding>(embedding);
  w.output = std::make_unique<DenseLinear>(embedding);
  w.output_norm = random_tensor({c.d_model}, rng, 1.0f);
  for (int l = 0; l < c.n_layers; ++l) {
    LayerWeights L;
    L.attn_norm = random_tensor({c.d_model}, rng, 1.0f);
    L.wq = linear(c.q_width(), c.d_model), L.wk = linear(c.kv_width(), c.d_model), L.wv = linear(c.kv_width(), c.d_model);
    L.wo = linear(c.d_model, c.q_width());
    L.ffn_norm = random_tensor({c.d_model}, rng, 1.0f);
    L.w_gate = linear(c.d_ff, c.d_model), L.w_up = linear(c.d_ff, c.d_model), L.w_down = linear(c.d_model, c.d_ff);
    w.layers.push_back(std::move(L));
  }
  return Llama(c, std::move(w), Device::cpu());
}

// Remembers nothing: every pass holds the whole sequence from position 0.
class WholeSequence : public KvStore {
 public:
  explicit WholeSequence(const LlamaConfig& c) : c_(c) {}
  void attend(int, int64_t pos0, const Tensor& q, const Tensor& k, const Tensor& v, Tensor& out) override {
    REQUIRE(pos0 == 0);
    ops::attention(q, k, v, c_.n_heads, c_.n_kv_heads, 0, out);
  }

 private:
  LlamaConfig c_;
};

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  float m = 0;
  for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

}  // namespace

TEST_CASE("forward_batch gives each sequence the logits of its own forward", "[model]") {
  Llama model = tiny_model();
  WholeSequence kv(model.config());
  const std::vector<int32_t> a = {1, 5, 9, 2, 7}, b = {3, 3, 11};
  const std::vector<float> alone_a = model.forward(a, 0, kv, /*all_logits=*/true).to_vector();
  const std::vector<float> alone_b = model.forward(b, 0, kv).to_vector();
  const std::vector<SequenceChunk> chunks = {{a, 0, &kv, true}, {b, 0, &kv, false}};
  const Tensor both = model.forward_batch(chunks);
  REQUIRE(both.shape() == Shape{6, model.config().vocab_size});
  CHECK(max_abs_diff(both.rows(0, 5).to_vector(), alone_a) < 1e-4f);
  CHECK(max_abs_diff(both.rows(5, 1).to_vector(), alone_b) < 1e-4f);
}

TEST_CASE("embed, every layer, logits: the public steps are forward, bit for bit", "[model]") {
  Llama model = tiny_model();
  const LlamaConfig& c = model.config();
  WholeSequence kv(c);
  const std::vector<int32_t> tokens = {4, 8, 15, 16, 23, 3}, positions = {0, 1, 2, 3, 4, 5};
  const std::vector<float> plain = model.forward(tokens, 0, kv, true).to_vector();

  Tensor x({6, c.d_model});
  model.weights().embed(tokens, x);
  Llama::Activations a(c, 6, model.device());
  for (int l = 0; l < c.n_layers; ++l) {
    const std::vector<float> entering = x.to_vector();
    model.layer(l, x, a, positions, kv, 0);
    CHECK(x.to_vector() != entering);  // the layer changed the stream
  }
  CHECK(model.logits(x).to_vector() == plain);
}

TEST_CASE("forward refuses no tokens and positions past the context", "[model]") {
  Llama model = tiny_model();
  WholeSequence kv(model.config());
  const std::vector<int32_t> none, two = {1, 2};
  CHECK_THROWS_AS(model.forward(none, 0, kv), std::invalid_argument);
  CHECK_THROWS_AS(model.forward(two, 31, kv), std::invalid_argument);
  CHECK_THROWS_AS(model.forward(two, -1, kv), std::invalid_argument);
}
