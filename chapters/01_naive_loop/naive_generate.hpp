// Chapter 01's layer: generation by re-running the whole sequence at every step.
//
//   tokens = prompt
//   repeat n times:
//     logits = model(tokens)          ← every position, every layer, from scratch
//     next   = sample(logits of the last position)
//     tokens.append(next)
//
// It is correct and simple, and wasteful: the keys and values of positions 0 … T-2 come out
// exactly the same at every step, yet they are computed again. Chapter 02 keeps them.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "app/run_record.hpp"
#include "model/llama.hpp"
#include "sampling/sampler.hpp"
#include "tokenizer/tokenizer.hpp"

namespace infer {

// Remembers nothing between passes: attention sees only the keys and values of the pass
// itself, so every pass must hold the whole sequence from position 0.
class NoCache : public KvStore {
 public:
  explicit NoCache(const LlamaConfig& config) : n_heads_(config.n_heads), n_kv_heads_(config.n_kv_heads) {}
  void attend(int layer, int64_t pos0, const Tensor& q, const Tensor& k, const Tensor& v,
              Tensor& out) override;

 private:
  int n_heads_, n_kv_heads_;
};

// What one generation step cost.
struct StepCost {
  int64_t seq_len = 0;       // tokens fed through the model at this step
  int64_t n_past = 0;        // positions before them that the step did not recompute
  int64_t macs_counted = 0;  // counted by the operations as they ran
  int64_t macs_formula = 0;  // forward_cost() for the same pass
};

struct GenerateOptions {
  int n_predict = 32;
  bool stop_at_end = true;  // stop at an end-of-generation token (e.g. <|im_end|>)
  int top_logits = 5;       // how many top logits each StepRecord keeps
};

struct Generation {
  std::vector<StepRecord> steps;  // one per generated token
  std::vector<StepCost> costs;    // one per step
};

// Calls on_token(step) as soon as each token is chosen, so that text can stream.
Generation generate_naive(Llama& model, const Tokenizer& tokenizer, std::vector<int32_t> prompt,
                          Sampler& sampler, const GenerateOptions& options,
                          const std::function<void(const StepRecord&)>& on_token = {});

}  // namespace infer
