#include "agreement.hpp"

#include <memory>
#include <stdexcept>
#include <string>

#include "03_gqa/grouped_kv_cache.hpp"
#include "question_battery.hpp"  // greedy_batch, chat_prompt
#include "tensor/ops.hpp"

namespace infer::quant {

int64_t GreedyReference::positions() const {
  int64_t n = 0;
  for (const auto& c : continuations) n += std::ssize(c);
  return n;
}

GreedyReference greedy_reference(Llama& model, const Tokenizer& tokenizer, int tokens_per_prompt) {
  static const std::vector<std::string> prompts = {
      "Write a short story about a cat who learns to swim.",
      "Explain how a bicycle works to a ten-year-old.",
      "Describe a busy market on a Saturday morning.",
  };
  GreedyReference ref;
  for (const std::string& p : prompts) ref.prompts.push_back(chat_prompt(tokenizer, p));
  ref.continuations = greedy_batch(model, tokenizer, ref.prompts, tokens_per_prompt, /*stop_at_end=*/true);
  return ref;
}

AgreementCount greedy_agreement_with(Llama& model, const GreedyReference& ref) {
  if (ref.prompts.size() != ref.continuations.size()) throw std::invalid_argument("greedy_agreement_with: sizes differ");
  // Each sequence is prompt + continuation minus its last token (nothing is asked after it).
  std::vector<std::vector<int32_t>> inputs;
  std::vector<std::unique_ptr<GroupedKvCache>> caches;
  std::vector<SequenceChunk> chunks;
  for (std::size_t s = 0; s < ref.prompts.size(); ++s) {
    if (ref.continuations[s].empty()) continue;
    std::vector<int32_t> seq = ref.prompts[s];
    seq.insert(seq.end(), ref.continuations[s].begin(), ref.continuations[s].end() - 1);
    inputs.push_back(std::move(seq));
  }
  for (const auto& seq : inputs) {
    caches.push_back(std::make_unique<GroupedKvCache>(model.config(), std::ssize(seq), model.device()));
    chunks.push_back({seq, 0, caches.back().get(), true});
  }
  AgreementCount count;
  if (chunks.empty()) return count;
  const Tensor logits = model.forward_batch(chunks).to(Device::cpu());
  int64_t row = 0;
  std::size_t k = 0;
  for (std::size_t s = 0; s < ref.prompts.size(); ++s) {
    const auto& cont = ref.continuations[s];
    if (cont.empty()) continue;
    const auto P = std::ssize(ref.prompts[s]);
    // Row P−1+i of this sequence predicts continuation token i.
    for (int64_t i = 0; i < std::ssize(cont); ++i) {
      const int32_t choice = ops::argmax(logits.row(row + P - 1 + i));
      count.positions += 1;
      count.agreeing += choice == cont[i] ? 1 : 0;
    }
    row += std::ssize(inputs[k++]);
  }
  return count;
}

}  // namespace infer::quant
