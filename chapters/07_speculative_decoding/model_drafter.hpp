// Chapter 07's layer, part 3: a draft that is a model — its own weights, its own cache.
//
// ModelDrafter runs any Llama autoregressively for γ steps, exactly like chapter 02's decode
// loop, with a GroupedKvCache of its own (chapter 03). The drafts of this chapter differ only
// in which Llama they hand it:
//   quantized self-draft   the target's weights packed to 8 or 4 bits (chapter 06's kernels):
//                          the same function, a few times fewer bytes per step
//   layer-skip self-draft  the target's first k layers, then its final norm and output head
//                          (first_layers below): no extra memory at all
//   another model          any GGUF with the same vocabulary (--draft-model), e.g. chapter
//                          08's distilled student
//
// Rolling back: each round the target keeps some prefix of the guesses. The drafter keeps the
// list of tokens its cache holds and, at the next propose(), truncates the cache to the part
// that still agrees with the accepted sequence, then feeds only what is new (usually the
// target's correction, or the last guess and the bonus token).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "drafter.hpp"
#include "03_gqa/grouped_kv_cache.hpp"
#include "model/llama.hpp"
#include "sampling/sampler.hpp"

namespace infer {

class ModelDrafter : public Drafter {
 public:
  // `capacity`: the longest sequence the draft will see (prompt + tokens + γ). The draft draws
  // with the same temperature/top-k/top-p as the target (its own seed).
  ModelDrafter(std::string name, Llama model, int64_t capacity, SamplingParams sampling);
  std::string name() const override { return name_; }
  Draft propose(std::span<const int32_t> context, int gamma) override;

  const Llama& model() const { return model_; }

 private:
  std::string name_;
  Llama model_;
  GroupedKvCache cache_;
  std::vector<int32_t> fed_;  // the tokens whose keys and values cache_ holds, in order
  Sampler sampler_;
};

// The first `k` layers of `model`, then its final norm and output head, as a Llama of its own
// that shares every weight with `model` (no copy): the layer-skip self-draft. `model` must
// outlive the result. k = the model's depth gives the target itself.
Llama first_layers(const Llama& model, int k);

}  // namespace infer
