#include "training_data.hpp"

#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "eval/evaluation.hpp"  // read_eval_text, held_out_text
#include "measure/table.hpp"  // format_seconds
#include "measure/timing.hpp"
#include "training_text.hpp"

namespace infer::distill {

TextSplit split_text(const Tokenizer& tokenizer, int64_t budget, int S, int calibration_windows, int64_t eval_tokens) {
  const std::string text = read_eval_text();
  const std::vector<int32_t> all = tokenizer.encode(training_text(text), /*parse_special=*/false);
  TextSplit split;
  split.training_text_tokens = std::ssize(all);
  const int64_t windows = std::ssize(all) / S - calibration_windows;  // those free for training
  const int64_t wanted = (budget + S - 1) / S;
  if (wanted > windows)
    throw UsageError(fmt::format("--tokens {} needs {} windows of {}; the training text (Genesis–Judges, {} tokens) "
                                 "holds {}", budget, wanted, S, all.size(), windows));
  for (int64_t i = 0; i < wanted; ++i) {  // evenly spread: window ⌊i · windows / wanted⌋
    const int64_t w = i * windows / wanted;
    split.training.insert(split.training.end(), all.begin() + w * S, all.begin() + (w + 1) * S);
  }
  split.calibration.assign(all.begin() + windows * S, all.begin() + (windows + calibration_windows) * S);
  split.held_out = tokenizer.encode(held_out_text(text), /*parse_special=*/false);
  if (std::ssize(split.held_out) > eval_tokens) split.held_out.resize(eval_tokens);
  return split;
}

train::TeacherLabels cached_teacher_labels(LoadedModel& m, const std::string& model_path, const std::vector<int32_t>& tokens,
                                           int S, int k, const std::vector<double>& temperatures) {
  namespace fs = std::filesystem;
  // The key: the model file (name and size), the tokens and their windowing, k, the temperatures.
  const std::string model_key = fmt::format("{}:{}:T={}", fs::path(model_path).filename().string(),
                                            fs::file_size(model_path), fmt::join(temperatures, ","));
  std::vector<uint8_t> key(model_key.begin(), model_key.end());
  const auto* p = reinterpret_cast<const uint8_t*>(tokens.data());
  key.insert(key.end(), p, p + tokens.size() * sizeof(int32_t));
  const fs::path dir = fs::path(INFER_DATA_DIR) / "cache";
  const std::string path = (dir / fmt::format("ch08_teacher_{:016x}_S{}_k{}.topk", train::fnv1a64(key), S, k)).string();
  const std::vector<float> wanted_temperatures(temperatures.begin(), temperatures.end());
  if (fs::exists(path)) {
    try {
      train::TeacherLabels t = train::TeacherLabels::load(path);
      if (t.tokens == tokens && t.k == k && t.window == S && t.temperatures == wanted_temperatures) {
        fmt::print(stderr, "teacher labels: {} (cached; checksum verified)\n", path);
        return t;
      }
      fmt::print(stderr, "teacher labels: {} holds other tokens; making it again\n", path);
    } catch (const train::TeacherFileError& e) {
      fmt::print(stderr, "teacher labels: {}; making it again\n", e.what());
    }
  }
  Stopwatch clock;
  train::TeacherLabels t = train::teacher_pass(m.model, tokens, S, k, temperatures, "teacher pass");
  std::error_code ec;
  fs::create_directories(dir, ec);
  t.save(path);
  fmt::print(stderr, "teacher labels: {} positions, top {} and the tail at T = {} each, in {} → {}\n", t.size(), k,
             fmt::join(temperatures, ", "), format_seconds(clock.seconds()), path);
  return t;
}

}  // namespace infer::distill
