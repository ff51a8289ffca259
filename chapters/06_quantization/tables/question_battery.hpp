// Chapter 06's study: a battery of short factual questions, and greedy decoding of many
// prompts at once.
//
// data/questions.tsv holds one question per line: the question, a tab, then the accepted answers
// separated by '|' ("What is the capital of France?<TAB>Paris"). Each question is put in the chat
// template and answered by greedy decoding (no sampling; by default no repetition penalty, or
// llama.cpp's over the last 64 tokens, prompt included, when one is given); the reply is
// correct when one of the accepted answers appears in it as a whole word, ignoring case.
//
// A battery of n questions measures a proportion with a wide margin: the 95% Wilson interval of
// 12 correct out of 16 is 0.51 … 0.90. Two models must differ by several questions before the
// battery can tell them apart; a difference of one question is no evidence at all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/llama.hpp"
#include "tokenizer/tokenizer.hpp"

namespace infer::quant {

struct Question {
  std::string question;
  std::vector<std::string> answers;  // accepted answers, any one suffices
};

std::string questions_path();  // INFER_DATA_DIR "/questions.tsv"
// Throws UsageError for a missing file, std::runtime_error naming the line of a malformed one.
std::vector<Question> read_questions(const std::string& path);

// Whether `reply` contains one of the accepted answers as a whole word (case-insensitive ASCII).
bool answer_matches(const std::string& reply, const Question& question);

// Greedy continuations of several prompts decoded together: one forward call per step carries
// one token of every unfinished sequence (each with its own cache), so the weights are read once
// per step for the whole batch instead of once per sequence. A sequence stops after max_new
// tokens or, when stop_at_end is set, at an end-of-generation token (which is kept).
// With penalty.repeat_penalty ≠ 1, each step's logits first get lib's apply_repetition_penalty
// over the sequence's last repeat_last_n tokens (prompt and answer so far), as llama.cpp's
// sampler does; the choice is then the argmax of the penalized logits.
struct GreedyPenalty {
  float repeat_penalty = 1.0f;  // 1: plain greedy
  int repeat_last_n = 64;
};
std::vector<std::vector<int32_t>> greedy_batch(Llama& model, const Tokenizer& tokenizer,
                                               const std::vector<std::vector<int32_t>>& prompts, int max_new,
                                               bool stop_at_end = true, GreedyPenalty penalty = {});

// The chat-template token ids of one user message.
std::vector<int32_t> chat_prompt(const Tokenizer& tokenizer, const std::string& user_message);

struct BatteryResult {
  std::vector<std::string> replies;
  std::vector<bool> correct;
  int64_t score() const;
  int64_t size() const { return std::ssize(correct); }
};
BatteryResult run_battery(Llama& model, const Tokenizer& tokenizer, const std::vector<Question>& questions,
                          int max_new_tokens = 24, GreedyPenalty penalty = {});

// The Wilson score interval of k successes in n trials (z = 1.96: 95%).
struct Interval {
  double lo = 0, hi = 0;
};
Interval wilson_interval(int64_t k, int64_t n, double z = 1.96);

}  // namespace infer::quant
