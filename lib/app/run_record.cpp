#include "app/run_record.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "measure/atomic_file.hpp"
#include "tensor/ops.hpp"  // cpu_backend
#include "tensor/simd_target.hpp"
#include "tokenizer/utf8.hpp"

namespace infer {

namespace {

// Puts `text` under `key`: as it is when it is valid UTF-8; otherwise with each broken
// sequence replaced by U+FFFD, and its exact bytes under key + "_bytes".
void put_text(nlohmann::json& j, const std::string& key, const std::string& text) {
  const std::string valid = utf8::replace_invalid(text);
  j[key] = valid;
  if (valid != text) j[key + "_bytes"] = std::vector<uint8_t>(text.begin(), text.end());
}

// ---- reading: a record is input like any other, so every value is checked before it is used ----

// A value as the error message shows it: its JSON, cut short.
std::string shown(const nlohmann::json& j) {
  const std::string text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return text.size() <= 24 ? text : text.substr(0, 20) + "…";
}

// The number `j` as a T, or an error naming `what`. nlohmann's get<T>() converts any number with a
// plain cast: 1e100 into an int is undefined behaviour (in practice some arbitrary token id), and
// 2^40 into an int32 silently loses its high bits. So an integer field takes a whole number that T
// holds exactly, and a real field a number T holds as a finite value (JSON cannot write infinity
// back: a record that was read must be one that can be written).
template <typename T>
T number(const nlohmann::json& j, const std::string& what) {
  using limits = std::numeric_limits<T>;
  if constexpr (std::is_floating_point_v<T>) {
    if (j.is_number()) {
      const double d = j.get<double>();
      if (std::isfinite(d) && std::fabs(d) <= static_cast<double>(limits::max())) return static_cast<T>(d);
    }
    throw std::runtime_error(fmt::format("{} is {}, not a finite number", what, shown(j)));
  } else {
    if (j.is_number_unsigned()) {
      if (const auto u = j.get<uint64_t>(); std::in_range<T>(u)) return static_cast<T>(u);
    } else if (j.is_number_integer()) {
      if (const auto i = j.get<int64_t>(); std::in_range<T>(i)) return static_cast<T>(i);
    } else if (j.is_number_float()) {  // 42.0 is 42; 0.5 and 1e100 are not whole numbers of T
      const double d = j.get<double>();
      if (d == std::trunc(d) && d >= static_cast<double>(limits::min()) && d < std::ldexp(1.0, limits::digits))
        return static_cast<T>(d);
    }
    throw std::runtime_error(fmt::format("{} is {}, not a whole number from {} to {}", what, shown(j),
                                         limits::min(), limits::max()));
  }
}

// The array under `key`, or an error (a number or an object is not a list of steps). The key is a
// C string, not a std::string, so that a call with a literal binds no temporary to a reference
// whose referent the result could outlive (g++ 14's -Wdangling-reference).
const nlohmann::json& array_at(const nlohmann::json& j, const char* key) {
  const nlohmann::json& a = j.at(key);
  if (!a.is_array()) throw std::runtime_error(fmt::format("{} is {}, not an array", key, shown(a)));
  return a;
}

template <typename T>
std::vector<T> numbers(const nlohmann::json& j, const std::string& key) {
  std::vector<T> out;
  const nlohmann::json& a = array_at(j, key.c_str());
  for (std::size_t i = 0; i < a.size(); ++i) out.push_back(number<T>(a[i], fmt::format("{}[{}]", key, i)));
  return out;
}

// The text stored under `key`, from its exact bytes when the record has them.
std::string get_text(const nlohmann::json& j, const std::string& key) {
  if (j.contains(key + "_bytes")) {
    const auto b = numbers<uint8_t>(j, key + "_bytes");
    return {b.begin(), b.end()};
  }
  return j.value(key, "");
}

nlohmann::json settings_json(const RunSettings& s) {
  return {{"temperature", s.temperature}, {"top_k", s.top_k}, {"top_p", s.top_p}, {"seed", s.seed},
          {"chat", s.chat}, {"n_predict", s.n_predict}, {"device", s.device}};
}

RunSettings settings_from_json(const nlohmann::json& j) {
  RunSettings s;
  // A setting the record does not state keeps its default (records older than the setting).
  const auto read = [&j](const char* key, auto& value) {
    if (j.contains(key)) value = number<std::remove_reference_t<decltype(value)>>(j.at(key), fmt::format("settings.{}", key));
  };
  read("temperature", s.temperature);
  read("top_k", s.top_k);
  read("top_p", s.top_p);
  read("seed", s.seed);
  s.chat = j.value("chat", s.chat);
  read("n_predict", s.n_predict);
  s.device = j.value("device", s.device);
  return s;
}

}  // namespace

std::vector<std::string> settings_differences(const RunSettings& a, const RunSettings& b) {
  std::vector<std::string> out;
  const auto differ = [&](const char* name, const auto& x, const auto& y) {
    if (x != y) out.push_back(fmt::format("{} {} vs {}", name, x, y));
  };
  differ("temperature", a.temperature, b.temperature);
  differ("top-k", a.top_k, b.top_k);
  differ("top-p", a.top_p, b.top_p);
  differ("seed", a.seed, b.seed);
  differ("chat", a.chat, b.chat);
  differ("n-predict", a.n_predict, b.n_predict);
  differ("device", a.device, b.device);
  return out;
}

TopLogits top_logits(std::span<const float> logits, int k) {
  if (k <= 0) return {};  // none asked for (greedy decoding in a benchmark): no work at all
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  const int64_t n = std::min<int64_t>(k, std::ssize(ids));
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] > logits[b] ||
           (logits[a] == logits[b] && a < b);
  });
  TopLogits top;
  for (int64_t i = 0; i < n; ++i) top.emplace_back(ids[i], logits[ids[i]]);
  return top;
}

std::vector<int32_t> RunRecord::tokens() const {
  std::vector<int32_t> t;
  for (const auto& s : steps) t.push_back(s.token);
  return t;
}

nlohmann::json RunRecord::to_json() const {
  nlohmann::json steps_json = nlohmann::json::array();
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const StepRecord& s = steps[i];
    nlohmann::json step = {{"token", s.token}, {"top", s.top}, {"seconds", s.seconds}};
    if (i < step_texts.size()) step["text"] = utf8::replace_invalid(step_texts[i]);
    steps_json.push_back(std::move(step));
  }
  nlohmann::json j = {{"binary", binary},
                      {"kind", kind},
                      {"model", {{"file", std::filesystem::path(model).filename().string()}, {"path", model}, {"sha256", model_sha256}}},
                      {"settings", settings_json(settings)},
                      {"prompt_ids", prompt_ids},
                      {"steps", steps_json},
                      {"figures", figures},
                      {"simd", simd::target_name()},  // the kernels this run chose (tensor/simd_target.hpp)
                      {"backend", backend.empty() ? std::string(cpu_backend_name(cpu_backend())) : backend}};
  put_text(j, "prompt", prompt);
  put_text(j, "text", text);
  return j;
}

RunRecord RunRecord::from_json(const nlohmann::json& j) {
  RunRecord r;
  r.binary = j.value("binary", "");
  r.kind = j.value("kind", "generation");
  if (const auto m = j.find("model"); m != j.end() && m->is_object()) {
    r.model = m->value("path", m->value("file", ""));
    r.model_sha256 = m->value("sha256", "");
  } else {
    r.model = j.value("model", "");  // records written before the model had a hash
  }
  if (j.contains("settings")) r.settings = settings_from_json(j.at("settings"));
  r.prompt = get_text(j, "prompt");
  r.prompt_ids = numbers<int32_t>(j, "prompt_ids");
  const nlohmann::json& steps = array_at(j, "steps");
  for (std::size_t i = 0; i < steps.size(); ++i) {
    const nlohmann::json& s = steps[i];
    const std::string where = fmt::format("steps[{}]", i);
    StepRecord step{number<int32_t>(s.at("token"), where + ".token"), {}, 0.0};
    const nlohmann::json& top = array_at(s, "top");
    for (std::size_t k = 0; k < top.size(); ++k) {  // [[id, logit], ...]
      const std::string pair = fmt::format("{}.top[{}]", where, k);
      step.top.emplace_back(number<int32_t>(top[k].at(0), pair + "[0]"), number<float>(top[k].at(1), pair + "[1]"));
    }
    if (s.contains("seconds")) step.seconds = number<double>(s.at("seconds"), where + ".seconds");
    r.steps.push_back(std::move(step));
    if (s.contains("text")) r.step_texts.push_back(s.at("text").get<std::string>());
  }
  if (r.step_texts.size() != r.steps.size()) r.step_texts.clear();  // all or none
  r.text = get_text(j, "text");
  r.figures = j.value("figures", nlohmann::json::object());
  r.backend = j.value("backend", "fast");
  if (!parse_cpu_backend(r.backend))
    throw std::runtime_error(fmt::format("backend is {}, not \"fast\" or \"reference\"", shown(j.at("backend"))));
  return r;
}

void RunRecord::write(const std::string& path) const {
  if (path.empty()) return;
  // Any string the checks above missed (a figure's label) is replaced, never a reason to fail.
  const std::string json = to_json().dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  // Written next to the target and renamed over it: readers see the old file or the whole new one.
  write_file_atomically(path, json);
}

RunRecord RunRecord::read(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot read " + path);
  return parse(f, path);
}

RunRecord RunRecord::parse(std::istream& in, const std::string& name) {
  // Records are a few levels deep (figures: tables of rows of cells). The parser keeps its own
  // stack, but copying or printing a value recurses once per level, so a file of a million
  // nested brackets would overflow the stack: refuse it while parsing.
  constexpr int kMaxDepth = 64;
  const auto shallow = [&](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth > kMaxDepth) throw std::runtime_error(fmt::format("nested more than {} levels deep", kMaxDepth));
    return true;
  };
  try {
    // Parsed from the stream, not from a copy of the file in memory.
    return from_json(nlohmann::json::parse(in, shallow));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(name + ": not a run record (" + e.what() + ")");
  } catch (const std::runtime_error& e) {  // from the checks above and in from_json
    throw std::runtime_error(name + ": not a run record (" + e.what() + ")");
  }
}

RunComparison compare_runs(const RunRecord& a, const RunRecord& b) {
  RunComparison c;
  c.same_model = a.model_sha256.empty() || b.model_sha256.empty()
                     ? std::filesystem::path(a.model).filename() == std::filesystem::path(b.model).filename()
                     : a.model_sha256 == b.model_sha256;
  c.setting_differences = settings_differences(a.settings, b.settings);
  c.same_prompt = a.prompt_ids == b.prompt_ids;
  // After different prompts the two runs saw different sequences: nothing more is comparable.
  if (!c.same_prompt) return c;
  c.compared_steps = std::min(std::ssize(a.steps), std::ssize(b.steps));
  for (int64_t i = 0; i < c.compared_steps; ++i) {
    const StepRecord& sa = a.steps[i];
    const StepRecord& sb = b.steps[i];
    // Logits of one step are comparable even when its chosen tokens differ (the prefixes were
    // still equal); after a divergence the two runs see different sequences.
    for (const auto& [id, logit] : sa.top) {
      c.max_logit = std::max(c.max_logit, static_cast<double>(std::fabs(logit)));
      for (const auto& [id_b, logit_b] : sb.top)
        if (id_b == id) c.max_logit_diff = std::max(c.max_logit_diff, static_cast<double>(std::fabs(logit - logit_b)));
    }
    if (sa.token != sb.token) {
      c.first_divergence = i;
      break;
    }
  }
  if (a.steps.size() != b.steps.size() && c.first_divergence < 0) c.first_divergence = c.compared_steps;
  return c;
}

}  // namespace infer
