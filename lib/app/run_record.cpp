#include "app/run_record.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

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

// The text stored under `key`, from its exact bytes when the record has them.
std::string get_text(const nlohmann::json& j, const std::string& key) {
  if (const auto bytes = j.find(key + "_bytes"); bytes != j.end()) {
    const auto b = bytes->get<std::vector<uint8_t>>();
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
  s.temperature = j.value("temperature", s.temperature);
  s.top_k = j.value("top_k", s.top_k);
  s.top_p = j.value("top_p", s.top_p);
  s.seed = j.value("seed", s.seed);
  s.chat = j.value("chat", s.chat);
  s.n_predict = j.value("n_predict", s.n_predict);
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
  std::vector<int32_t> ids(logits.size());
  std::iota(ids.begin(), ids.end(), 0);
  const auto n = static_cast<std::ptrdiff_t>(std::min<std::size_t>(static_cast<std::size_t>(k), ids.size()));
  std::partial_sort(ids.begin(), ids.begin() + n, ids.end(), [&](int32_t a, int32_t b) {
    return logits[static_cast<std::size_t>(a)] > logits[static_cast<std::size_t>(b)] ||
           (logits[static_cast<std::size_t>(a)] == logits[static_cast<std::size_t>(b)] && a < b);
  });
  TopLogits top;
  for (std::ptrdiff_t i = 0; i < n; ++i)
    top.emplace_back(ids[static_cast<std::size_t>(i)], logits[static_cast<std::size_t>(ids[static_cast<std::size_t>(i)])]);
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
                      {"figures", figures}};
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
  r.prompt_ids = j.at("prompt_ids").get<std::vector<int32_t>>();
  for (const auto& s : j.at("steps")) {
    r.steps.push_back({s.at("token").get<int32_t>(), s.at("top").get<TopLogits>(), s.value("seconds", 0.0)});
    if (s.contains("text")) r.step_texts.push_back(s.at("text").get<std::string>());
  }
  if (r.step_texts.size() != r.steps.size()) r.step_texts.clear();  // all or none
  r.text = get_text(j, "text");
  r.figures = j.value("figures", nlohmann::json::object());
  return r;
}

void RunRecord::write(const std::string& path) const {
  if (path.empty()) return;
  // Any string the checks above missed (a figure's label) is replaced, never a reason to fail.
  const std::string json = to_json().dump(1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  // Written next to the target and renamed over it: readers see the old file or the whole new one.
  const std::filesystem::path target(path);
  const std::filesystem::path temp = target.parent_path() / fmt::format(".{}.tmp-{}", target.filename().string(), ::getpid());
  {
    std::ofstream f(temp, std::ios::binary);
    f << json;
    f.close();
    if (!f) {
      std::error_code ignored;
      std::filesystem::remove(temp, ignored);
      throw std::runtime_error("cannot write " + temp.string());
    }
  }
  std::error_code error;
  std::filesystem::rename(temp, target, error);
  if (error) {
    std::filesystem::remove(temp, error);
    throw std::runtime_error("cannot write " + path + ": " + error.message());
  }
}

RunRecord RunRecord::read(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot read " + path);
  try {
    // Parsed from the stream, not from a copy of the file in memory.
    return from_json(nlohmann::json::parse(f));
  } catch (const nlohmann::json::exception& e) {
    throw std::runtime_error(path + ": not a run record (" + e.what() + ")");
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
  c.compared_steps = static_cast<int64_t>(std::min(a.steps.size(), b.steps.size()));
  for (int64_t i = 0; i < c.compared_steps; ++i) {
    const StepRecord& sa = a.steps[static_cast<std::size_t>(i)];
    const StepRecord& sb = b.steps[static_cast<std::size_t>(i)];
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
