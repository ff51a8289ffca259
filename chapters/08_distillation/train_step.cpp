#include "train_step.hpp"

#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "fake_quant.hpp"

namespace infer::train {

Batch make_batch(const TeacherLabels& t, std::span<const int64_t> windows, const LossOptions& loss) {
  Batch b;
  b.B = static_cast<int>(windows.size()), b.S = t.window, b.k = t.k;
  const bool needs_tail = loss.labels != LabelKind::hard && loss.target == SoftTarget::with_tail;
  const int column = t.temperature_index(loss.temperature);
  if (needs_tail && column < 0)
    throw std::invalid_argument(fmt::format("make_batch: the teacher file keeps the tail at T = {}, not at T = {}",
                                            fmt::join(t.temperatures, ", "), loss.temperature));
  const int64_t n_t = std::ssize(t.temperatures);
  for (int64_t w : windows) {
    if (w < 0 || w >= t.windows())
      throw std::invalid_argument(fmt::format("make_batch: window {} outside 0…{}", w, t.windows() - 1));
    const int64_t first = w * t.window, S = t.window, k = t.k;
    b.tokens.insert(b.tokens.end(), t.tokens.begin() + first, t.tokens.begin() + first + S);
    b.labels.insert(b.labels.end(), t.tokens.begin() + first + 1, t.tokens.begin() + first + S);
    b.labels.push_back(-1);  // the window's last token has no next token inside the window
    b.teacher_ids.insert(b.teacher_ids.end(), t.ids.begin() + first * k, t.ids.begin() + (first + S) * k);
    b.teacher_logits.insert(b.teacher_logits.end(), t.logits.begin() + first * k, t.logits.begin() + (first + S) * k);
    if (needs_tail)
      for (int64_t i = first; i < first + S; ++i) b.teacher_tail.push_back(t.tail_lse[i * n_t + column]);
  }
  return b;
}

// the-change: begin train_step
StepResult train_step(Student<float>& s, AdamW& optimizer, const Batch& batch, const StepOptions& o, int step) {
  StepResult r;
  s.zero_grad();
  // the-change: begin qat_step
  if (o.fake_quant) o.fake_quant->quantize_weights(s);  // QAT: W kept aside, the passes see Ŵ
  const float* logits = s.forward(batch.tokens, batch.B, batch.S);
  std::vector<float> d_logits(int64_t{batch.B} * batch.S * s.config().vocab_size);
  const SoftTargets soft = batch.soft();
  r.loss = distillation_loss(logits, batch.B * batch.S, s.config().vocab_size, batch.labels, &soft, o.loss, d_logits.data());
  s.backward(d_logits.data());
  if (o.fake_quant) o.fake_quant->restore_master(s);    // straight through: ∂L/∂Ŵ updates W
  // the-change: end qat_step
  r.grad_norm = clip_grad_norm(s.grads, o.clip_norm);
  r.lr = o.schedule.at(step);
  optimizer.step(s.params, s.grads, r.lr);
  return r;
}
// the-change: end train_step

}  // namespace infer::train
