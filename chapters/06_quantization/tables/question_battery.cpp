#include "question_battery.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "app/cli.hpp"  // UsageError
#include "03_gqa/grouped_kv_cache.hpp"
#include "sampling/sampler.hpp"
#include "tensor/ops.hpp"

namespace infer::quant {
namespace {

std::string lower(std::string s) {
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return s;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

bool is_word_char(char ch) { return std::isalnum(static_cast<unsigned char>(ch)) != 0; }

// The greedy choice after llama.cpp's repetition penalty over the last repeat_last_n tokens of
// prompt + answer (all of them for -1).
int32_t penalized_argmax(const Tensor& row, std::span<const int32_t> prompt, std::span<const int32_t> answer,
                         GreedyPenalty penalty) {
  std::vector<float> logits = row.to_vector();
  std::vector<int32_t> seen(prompt.begin(), prompt.end());
  seen.insert(seen.end(), answer.begin(), answer.end());
  const std::size_t n = penalty.repeat_last_n < 0 ? seen.size()
                                                  : std::min(seen.size(), static_cast<std::size_t>(penalty.repeat_last_n));
  apply_repetition_penalty(logits, std::span<const int32_t>(seen).last(n), penalty.repeat_penalty);
  return argmax(logits);
}

}  // namespace

std::string questions_path() { return std::string(INFER_DATA_DIR) + "/questions.tsv"; }

std::vector<Question> read_questions(const std::string& path) {
  if (!std::filesystem::exists(path)) throw UsageError("question battery " + path + " not found");
  std::ifstream in(path);
  std::vector<Question> out;
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    if (trim(line).empty() || line[0] == '#') continue;
    const auto tab = line.find('\t');
    if (tab == std::string::npos) throw std::runtime_error(fmt::format("{}:{}: no tab between question and answers", path, number));
    Question q{trim(line.substr(0, tab)), {}};
    std::string rest = line.substr(tab + 1);
    for (std::size_t start = 0; start <= rest.size();) {
      const auto bar = std::min(rest.find('|', start), rest.size());
      if (std::string a = trim(rest.substr(start, bar - start)); !a.empty()) q.answers.push_back(a);
      start = bar + 1;
    }
    if (q.question.empty() || q.answers.empty())
      throw std::runtime_error(fmt::format("{}:{}: a question needs text and at least one answer", path, number));
    out.push_back(std::move(q));
  }
  if (out.empty()) throw std::runtime_error(path + ": no questions");
  return out;
}

bool answer_matches(const std::string& reply, const Question& question) {
  const std::string r = lower(reply);
  for (const std::string& answer : question.answers) {
    const std::string a = lower(answer);
    for (auto at = r.find(a); at != std::string::npos; at = r.find(a, at + 1)) {
      const bool left = at == 0 || !is_word_char(r[at - 1]);
      const bool right = at + a.size() == r.size() || !is_word_char(r[at + a.size()]);
      if (left && right) return true;
    }
  }
  return false;
}

std::vector<int32_t> chat_prompt(const Tokenizer& tokenizer, const std::string& user_message) {
  return tokenizer.encode(tokenizer.apply_chat_template({{"user", user_message}}, true), /*parse_special=*/true);
}

std::vector<std::vector<int32_t>> greedy_batch(Llama& model, const Tokenizer& tokenizer,
                                               const std::vector<std::vector<int32_t>>& prompts, int max_new,
                                               bool stop_at_end, GreedyPenalty penalty) {
  const std::size_t n = prompts.size();
  std::vector<std::vector<int32_t>> out(n);
  if (n == 0 || max_new <= 0) return out;
  std::vector<std::unique_ptr<GroupedKvCache>> caches;
  for (const auto& p : prompts) {
    if (p.empty()) throw std::invalid_argument("greedy_batch: empty prompt");
    caches.push_back(std::make_unique<GroupedKvCache>(model.config(), std::ssize(p) + max_new, model.device()));
  }
  std::vector<std::size_t> active(n);
  for (std::size_t i = 0; i < n; ++i) active[i] = i;
  std::vector<int32_t> last(n);  // each sequence's newest token: the next step's input

  for (int step = 0; step < max_new && !active.empty(); ++step) {
    std::vector<SequenceChunk> chunks;
    for (std::size_t i : active) {
      if (step == 0)
        chunks.push_back({prompts[i], 0, caches[i].get(), false});
      else
        chunks.push_back({std::span<const int32_t>(&last[i], 1),
                          std::ssize(prompts[i]) + std::ssize(out[i]) - 1, caches[i].get(), false});
    }
    const Tensor logits = model.forward_batch(chunks).to(Device::cpu());
    std::vector<std::size_t> still;
    for (int64_t r = 0; r < std::ssize(active); ++r) {
      const std::size_t i = active[r];
      const int32_t next = penalty.repeat_penalty == 1.0f ? ops::argmax(logits.row(r))
                                                          : penalized_argmax(logits.row(r), prompts[i],
                                                                             out[i], penalty);
      out[i].push_back(next);
      last[i] = next;
      if (!(stop_at_end && tokenizer.ends_generation(next))) still.push_back(i);
    }
    active = std::move(still);
  }
  return out;
}

int64_t BatteryResult::score() const { return std::count(correct.begin(), correct.end(), true); }

BatteryResult run_battery(Llama& model, const Tokenizer& tokenizer, const std::vector<Question>& questions,
                          int max_new_tokens, GreedyPenalty penalty) {
  std::vector<std::vector<int32_t>> prompts;
  for (const Question& q : questions) prompts.push_back(chat_prompt(tokenizer, q.question));
  const auto replies = greedy_batch(model, tokenizer, prompts, max_new_tokens, true, penalty);
  BatteryResult result;
  for (std::size_t i = 0; i < questions.size(); ++i) {
    std::vector<int32_t> ids = replies[i];
    if (!ids.empty() && tokenizer.ends_generation(ids.back())) ids.pop_back();
    result.replies.push_back(tokenizer.decode(ids));
    result.correct.push_back(answer_matches(result.replies.back(), questions[i]));
  }
  return result;
}

Interval wilson_interval(int64_t k, int64_t n, double z) {
  if (n <= 0) return {0, 1};
  const double p = static_cast<double>(k) / static_cast<double>(n), nn = static_cast<double>(n), z2 = z * z;
  const double denom = 1 + z2 / nn;
  const double centre = (p + z2 / (2 * nn)) / denom;
  const double half = z * std::sqrt(p * (1 - p) / nn + z2 / (4 * nn * nn)) / denom;
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

}  // namespace infer::quant
