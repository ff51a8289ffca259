#include "qat.hpp"

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "06_quantization/absmax.hpp"
#include "fake_quant.hpp"
#include "measure/table.hpp"

namespace infer::distill {
namespace {

// The student as deployed in `scheme`: a lib Llama with Ŵ in every projection, built through the
// same FakeQuant calls a QAT step makes, so a QAT model deploys exactly the rounding it trained
// with (of its final master weights).
Score quantized_score(train::Student<float>& s, const quant::QuantScheme& scheme, const HeldOut& h, const std::string& label) {
  train::FakeQuant fake_quant(&scheme);
  fake_quant.quantize_weights(s);
  Llama deployed = train::to_llama(s);
  fake_quant.restore_master(s);
  return score_on(deployed, h, label);
}

Score fp32_score(const train::Student<float>& s, const HeldOut& h, const std::string& label) {
  Llama model = train::to_llama(s);
  return score_on(model, h, label);
}

std::string steps_text(int n) { return fmt::format("{} step{}", n, n == 1 ? "" : "s"); }

struct Row {
  std::string model, steps, weights;
  double last_loss = NAN;  // the last training step's loss, where the row trained
  Score score;
};

// Bits per weight of the projection matrices under `scheme`, scales included; and how many weights.
std::pair<double, int64_t> packed_cost(const train::Student<float>& s, const quant::QuantScheme& scheme) {
  int64_t weights = 0;
  double bytes = 0;
  for (const train::ProjectionMatrix<const float>& m : train::projection_matrices(s, s.params.data())) {
    weights += m.rows * m.cols;
    bytes += static_cast<double>(scheme.packed_bytes(m.rows, m.cols));
  }
  return {8.0 * bytes / static_cast<double>(weights), weights};
}

}  // namespace

void print_qat_table(std::span<const TrainedRun> runs, const train::TeacherLabels& labels, const TrainSettings& t,
                     const HeldOut& h, int steps, const CommonOptions& o, nlohmann::json& figures) {
  const int64_t group = 128;
  const quant::AbsmaxScheme int4(4, quant::Granularity::per_group, group);  // chapter 06's INT4 g128
  Table table(fmt::format("Quantization-aware training against post-training {}: {} more step{} at an equal budget, "
                          "then the held-out text ({} tokens)", int4.name(), steps, steps == 1 ? "" : "s", h.tokens.size()),
              {"layers", "model", "training steps", "block weights", "last loss", "perplexity", "NLL (nats/token)",
               "agreement with the teacher", "vs the fp32 student", "top-1 = next token"});
  std::string from, cost, seconds;  // for the notes
  int64_t tokens = 0;               // of one fine-tune
  for (const TrainedRun& run : runs) {
    if (!run.student) continue;  // the kept student of each depth only
    train::Student<float>& distilled = *run.student;
    const int trained = static_cast<int>(run.loss.size());
    const auto [bits, weights] = packed_cost(distilled, int4);
    const std::string fp32 = "fp32", quantized = fmt::format("{} ({:.3f} bits)", int4.name(), bits);
    const std::string name = fmt::format("{} layers", run.depth);
    std::vector<Row> rows;
    rows.push_back({"student (distilled)", std::to_string(trained), fp32, run.loss.back(), run.after});
    rows.push_back({"  PTQ: → " + int4.name(), std::to_string(trained), quantized, NAN,
                    quantized_score(distilled, int4, h, name + ", PTQ")});

    const uint64_t seed = run.seed + 1;  // a fresh order of the same windows, the same for both fine-tunes
    const std::string more = fmt::format("{} + {}", trained, steps);
    TrainedRun fp32_run, qat_run;  // their loss curves and times
    {
      train::Student<float> s = distilled;
      train_steps(s, labels, run.spec.loss, t, seed, steps, name + ", fp32 fine-tune", fp32_run);
      s.grads = {};
      rows.push_back({"fp32 fine-tune", more, fp32, fp32_run.loss.back(), fp32_score(s, h, name + ", fp32 fine-tune")});
      rows.push_back({"  then PTQ: → " + int4.name(), more, quantized, NAN,
                      quantized_score(s, int4, h, name + ", fine-tune + PTQ")});
    }
    {
      train::Student<float> s = distilled;
      train::FakeQuant fake_quant(&int4);
      train_steps(s, labels, run.spec.loss, t, seed, steps, name + ", QAT", qat_run, &fake_quant);
      s.grads = {};
      rows.push_back({"QAT: fake-quant fine-tune → " + int4.name(), more, quantized, qat_run.loss.back(),
                      quantized_score(s, int4, h, name + ", QAT")});
    }
    const double base = run.after.agreement.rate();
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const Row& r = rows[i];
      table.add_row({std::to_string(run.depth), r.model, r.steps, r.weights,
                     std::isnan(r.last_loss) ? "" : fmt::format("{:.4f}", r.last_loss), fmt::format("{:.2f}", r.score.perplexity),
                     fmt::format("{:.3f}", r.score.mean_nll), fmt::format("{:.1f}%", 100 * r.score.agreement.rate()),
                     i == 0 ? "" : fmt::format("{:+.1f} pt", 100 * (r.score.agreement.rate() - base)),
                     fmt::format("{:.1f}%", 100 * r.score.next_token)});
      figures["qat"].push_back({{"layers", run.depth}, {"model", r.model}, {"steps", r.steps}, {"weights", r.weights},
                                {"score", r.score.json()}, {"last_loss", std::isnan(r.last_loss) ? nlohmann::json() : nlohmann::json(r.last_loss)}});
    }
    tokens = fp32_run.tokens;
    from += fmt::format("{}{} layers: {}, {}", from.empty() ? "" : "; ", run.depth, run.spec.name, steps_text(trained));
    cost += fmt::format("{}{:.1f} M weights at {} layers", cost.empty() ? "" : ", ", static_cast<double>(weights) / 1e6, run.depth);
    seconds += fmt::format("{}{} layers {} fp32, {} QAT", seconds.empty() ? "" : "; ", run.depth,
                           format_seconds(fp32_run.seconds), format_seconds(qat_run.seconds));
  }
  if (from.empty()) return;
  table.add_note(fmt::format("Every row starts from the distilled student of the training table, the run with the best "
                             "agreement ({}; steps of {} windows × {} tokens). The two fine-tunes add {} each "
                             "({} tokens) of the same loss on the same teacher file, in one fresh order of its windows, "
                             "warm-up + cosine from lr {:g}: an equal budget. Wall time of the fine-tunes: {}.",
                             from, t.batch, labels.window, steps_text(steps), tokens, t.lr, seconds));
  table.add_note(fmt::format("{}: chapter 06's symmetric absmax, a 4-bit code per weight and a 16-bit scale per group of "
                             "{}, on the 7 projection matrices of every block ({}); the norms and the frozen tied "
                             "embedding and head stay fp32. QAT: the forward and backward compute with Ŵ = "
                             "dequant(quant(W)), the gradient updates the fp32 master W (straight-through estimator); "
                             "its INT4 model is the same rounding of its final W.", int4.name(), group, cost));
  table.add_note(fmt::format("Held out: Ruth, {} tokens in windows of {}; perplexity and NLL per token of the text, "
                             "agreement = the model's greedy next token is the teacher's. last loss: the training loss "
                             "at the row's last step (before that step's update), of the weights its forward saw — fp32, "
                             "or Ŵ for QAT.", h.tokens.size(), h.window));
  table.emit(o.csv_path);
}

}  // namespace infer::distill
