#include "eval/evaluation.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <memory>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "app/cli.hpp"  // UsageError
#include "measure/progress.hpp"
#include "measure/timing.hpp"

namespace infer {

std::string eval_text_path() { return std::string(INFER_DATA_DIR) + "/text/web.txt"; }

std::string read_eval_text() {
  const std::string path = eval_text_path();
  if (!std::filesystem::exists(path))
    throw UsageError("evaluation text " + path + " not found: run data/fetch_eval_text.sh first");
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in && !in.eof()) throw std::runtime_error("could not read " + path);
  return text.str();
}

std::string held_out_text(const std::string& eval_text) {
  const std::string marker = "\nRuth\n\n";
  const std::size_t at = eval_text.rfind(marker);
  if (at == std::string::npos)
    throw std::runtime_error("the evaluation text has no line \"Ruth\" (rerun data/fetch_eval_text.sh)");
  return eval_text.substr(at + marker.size());
}

double TextEvaluation::mean_nll() const {
  if (nll.empty()) return std::numeric_limits<double>::quiet_NaN();
  double sum = 0;
  for (double x : nll) sum += x;
  return sum / static_cast<double>(nll.size());
}

double TextEvaluation::perplexity() const { return std::exp(mean_nll()); }

double TextEvaluation::greedy_accuracy(std::span<const int32_t> tokens) const {
  int64_t hits = 0;
  for (std::size_t i = 0; i < greedy.size(); ++i)
    hits += greedy[i] == tokens[positions[i]] ? 1 : 0;
  return greedy.empty() ? 0.0 : static_cast<double>(hits) / static_cast<double>(greedy.size());
}

namespace {

void check(const Llama& model, int64_t n, const EvalOptions& o) {
  if (n < 2) throw std::invalid_argument(fmt::format("evaluate_text: {} tokens, need at least 2", n));
  if (o.window < 2 || o.window > model.config().context_length || o.chunk < 1)
    throw std::invalid_argument(fmt::format("evaluate_text: window {} outside 2…{} or chunk {} < 1", o.window,
                                            model.config().context_length, o.chunk));
}

}  // namespace

int64_t window_tokens(const Llama& model, int64_t n_tokens, const EvalOptions& o) {
  check(model, n_tokens, o);
  return std::min(o.window, n_tokens);
}

TextEvaluation evaluate_text(Llama& model, std::span<const int32_t> tokens, KvStore& cache,
                             const std::function<void()>& clear, const EvalOptions& o) {
  const int64_t n = std::ssize(tokens);
  check(model, n, o);
  const int64_t vocab = model.config().vocab_size;
  TextEvaluation result;
  Stopwatch clock;
  std::unique_ptr<ProgressBar> bar;
  if (!o.progress_label.empty()) bar = std::make_unique<ProgressBar>(o.progress_label, n);

  for (int64_t start = 0; start < n; start += o.window) {
    const int64_t len = std::min(o.window, n - start);
    clear();
    ++result.windows;
    for (int64_t c0 = 0; c0 < len; c0 += o.chunk) {
      const int64_t m = std::min(o.chunk, len - c0);
      const Tensor logits = model.forward(tokens.subspan(start + c0, m),
                                          c0, cache, /*all_logits=*/true)
                                .to(Device::cpu());
      const float* rows = logits.host<float>();
      // Row i predicts the token at window position c0 + i + 1 (the window's last row predicts
      // nothing: the next token belongs to the next window, which starts afresh).
      for (int64_t i = 0; i < m; ++i) {
        const int64_t target_pos = start + c0 + i + 1;
        if (c0 + i + 1 >= len) break;
        const float* row = rows + i * vocab;
        // log-softmax in double: log p(t) = x_t − max − log Σ exp(x − max)
        float max_logit = row[0];
        int32_t best = 0;
        for (int64_t v = 1; v < vocab; ++v)
          if (row[v] > max_logit) max_logit = row[v], best = static_cast<int32_t>(v);
        double sum = 0;
        for (int64_t v = 0; v < vocab; ++v) sum += std::exp(static_cast<double>(row[v]) - max_logit);
        const int32_t target = tokens[target_pos];
        result.nll.push_back(std::log(sum) - (static_cast<double>(row[target]) - max_logit));
        result.greedy.push_back(best);
        result.positions.push_back(target_pos);
      }
      if (bar) bar->advance(m);
    }
  }
  result.seconds = clock.seconds();
  return result;
}

Agreement greedy_agreement(const TextEvaluation& a, const TextEvaluation& b) {
  if (a.positions != b.positions)
    throw std::invalid_argument("greedy_agreement: the two evaluations cover different positions");
  Agreement agreement;
  agreement.positions = a.count();
  for (std::size_t i = 0; i < a.greedy.size(); ++i) agreement.agreeing += a.greedy[i] == b.greedy[i] ? 1 : 0;
  return agreement;
}

}  // namespace infer
