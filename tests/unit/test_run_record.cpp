// RunRecord and compare_runs: the logic behind stage_diff, on hand-made records; how records are
// written (valid UTF-8, atomically, with the model and settings that made them).
#include "catch_compat.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "app/run_record.hpp"
#include "app/sha256.hpp"
#include "tensor/ops.hpp"  // cpu_backend
#include "tokenizer/utf8.hpp"

using namespace infer;

namespace {

RunRecord record(std::vector<int32_t> tokens, std::vector<float> first_logit) {
  RunRecord r;
  r.binary = "test";
  r.prompt = "Hello";
  r.prompt_ids = {1, 2, 3};
  for (std::size_t i = 0; i < tokens.size(); ++i)
    r.steps.push_back({tokens[i], {{tokens[i], first_logit[i]}, {99, -1.0f}}, 0.01});
  return r;
}

}  // namespace

TEST_CASE("compare_runs finds no divergence in identical runs", "[run_record]") {
  const RunRecord a = record({10, 11, 12}, {5.0f, 6.0f, 7.0f});
  const RunComparison c = compare_runs(a, a);
  CHECK(c.same_prompt);
  CHECK(c.compared_steps == 3);
  CHECK(c.first_divergence == -1);
  CHECK(c.identical_tokens());
  CHECK(c.max_logit_diff == 0.0);
  CHECK(c.max_logit == Approx(7.0));
}

TEST_CASE("compare_runs reports the first divergence and the largest logit difference", "[run_record]") {
  // Same tokens at steps 1 and 2 (logits off by 0.25 at step 2), different at step 3.
  const RunRecord a = record({10, 11, 12, 13}, {5.0f, 6.0f, 7.0f, 8.0f});
  RunRecord b = record({10, 11, 20, 13}, {5.0f, 6.25f, 7.0f, 8.0f});
  b.steps[2].top = {{20, 7.5f}, {12, 7.0f}};  // B preferred token 20; token 12's logit still comparable
  const RunComparison c = compare_runs(a, b);
  CHECK(c.same_prompt);
  CHECK(c.first_divergence == 2);
  CHECK_FALSE(c.identical_tokens());
  CHECK(c.max_logit_diff == Approx(0.25));
  CHECK(c.max_logit == Approx(7.0));  // steps after the divergence are not compared
}

TEST_CASE("compare_runs: a different prompt or a shorter run is not identical", "[run_record]") {
  const RunRecord a = record({10, 11, 12}, {5.0f, 6.0f, 7.0f});
  RunRecord other_prompt = a;
  other_prompt.prompt_ids = {1, 2, 4};
  CHECK_FALSE(compare_runs(a, other_prompt).identical_tokens());
  CHECK(compare_runs(a, other_prompt).first_divergence == -1);

  const RunRecord shorter = record({10, 11}, {5.0f, 6.0f});
  const RunComparison c = compare_runs(a, shorter);
  CHECK(c.compared_steps == 2);
  CHECK(c.first_divergence == 2);  // the shorter run ends where the other goes on
}

TEST_CASE("a run record survives a JSON round trip", "[run_record]") {
  RunRecord a = record({10, 11}, {5.0f, 6.5f});
  a.text = "héllo";
  a.figures["x"] = 1.5;
  const RunRecord b = RunRecord::from_json(a.to_json());
  CHECK(b.prompt_ids == a.prompt_ids);
  CHECK(b.tokens() == a.tokens());
  CHECK(b.text == a.text);
  CHECK(b.figures["x"].get<double>() == 1.5);
  CHECK(compare_runs(a, b).identical_tokens());
  CHECK(compare_runs(a, b).max_logit_diff == 0.0);
}

// ---- records that never lose a run (issue: hardening) ----

namespace {

std::filesystem::path scratch(const std::string& name) {
  const auto dir = std::filesystem::temp_directory_path() / ("infer_test_record_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

std::size_t files_in(const std::filesystem::path& dir) {
  return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()));
}

}  // namespace

TEST_CASE("a prompt that is not UTF-8 is stored replaced, with its exact bytes beside it", "[run_record]") {
  RunRecord a = record({10}, {5.0f});
  a.prompt = "caf\xC3\xA9 \xFF\xFE end \xE2\x82";  // é, two bytes that are never UTF-8, a cut-off €
  a.text = "ok \xC0";
  a.figures["label"] = "bad \xFF";
  a.step_texts = {"\xE2"};
  const nlohmann::json j = a.to_json();
  // Strict serialisation succeeds: every string in the record is valid UTF-8 except the figures',
  // which write() replaces.
  nlohmann::json checked = j;
  checked.erase("figures");
  CHECK_NOTHROW(checked.dump());
  CHECK(j["prompt"] == "caf\xC3\xA9 \xEF\xBF\xBD\xEF\xBF\xBD end \xEF\xBF\xBD");
  CHECK(j["prompt_bytes"].size() == a.prompt.size());
  CHECK(j["text"] == "ok \xEF\xBF\xBD");
  CHECK(j["steps"][0]["text"] == "\xEF\xBF\xBD");
  CHECK_FALSE(RunRecord::from_json(record({10}, {5.0f}).to_json()).prompt.empty());
  CHECK_FALSE(record({10}, {5.0f}).to_json().contains("prompt_bytes"));  // valid text: no bytes
  const RunRecord b = RunRecord::from_json(j);
  CHECK(b.prompt == a.prompt);
  CHECK(b.text == a.text);
  CHECK(b.step_texts == std::vector<std::string>{"\xEF\xBF\xBD"});

  const auto dir = scratch("utf8");
  const std::string path = (dir / "r.json").string();
  CHECK_NOTHROW(a.write(path));
  CHECK(RunRecord::read(path).prompt == a.prompt);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a record is written atomically: the whole file or the old one, no leftovers", "[run_record]") {
  const auto dir = scratch("atomic");
  const std::string path = (dir / "r.json").string();
  RunRecord a = record({10, 11}, {5.0f, 6.0f});
  a.write(path);
  RunRecord b = record({12}, {7.0f});
  b.write(path);  // replaces
  CHECK(RunRecord::read(path).tokens() == std::vector<int32_t>{12});
  CHECK(files_in(dir) == 1);  // the temporary file was renamed, not left beside it

  // A directory that cannot take the file: an error, and the old record is untouched.
  CHECK_THROWS(a.write((dir / "no-such-dir" / "r.json").string()));
  CHECK(RunRecord::read(path).tokens() == std::vector<int32_t>{12});
  CHECK(files_in(dir) == 1);
  std::filesystem::remove_all(dir);
}

TEST_CASE("a record states its kind, model and the settings that shape its tokens", "[run_record]") {
  RunRecord a = record({10}, {5.0f});
  a.binary = "ch02_kv_cache";
  a.kind = "generation";
  a.model = "/models/SmolLM2.gguf";
  a.model_sha256 = std::string(64, 'a');
  a.settings = {0.8f, 40, 0.95f, 1234, true, 16, "cuda:0"};
  const nlohmann::json j = a.to_json();
  CHECK(j["kind"] == "generation");
  CHECK(j["model"]["file"] == "SmolLM2.gguf");
  CHECK(j["model"]["sha256"] == a.model_sha256);
  CHECK(j["settings"]["temperature"].get<float>() == 0.8f);
  CHECK(j["settings"]["top_k"] == 40);
  CHECK(j["settings"]["top_p"].get<float>() == 0.95f);
  CHECK(j["settings"]["seed"] == 1234);
  CHECK(j["settings"]["chat"] == true);
  CHECK(j["settings"]["n_predict"] == 16);
  CHECK(j["settings"]["device"] == "cuda:0");
  const RunRecord b = RunRecord::from_json(j);
  CHECK(b.settings == a.settings);
  CHECK(b.model == a.model);
  CHECK(b.model_sha256 == a.model_sha256);
  CHECK(b.kind == "generation");
}

TEST_CASE("a record states the CPU backend it ran on; an older record reads as fast", "[run_record]") {
  RunRecord a = record({10}, {5.0f});
  a.backend = "reference";
  const nlohmann::json j = a.to_json();
  CHECK(j["backend"] == "reference");
  CHECK(RunRecord::from_json(j).backend == "reference");
  a.backend.clear();  // not stated: the backend of the process that writes it
  CHECK(a.to_json()["backend"] == std::string(cpu_backend_name(cpu_backend())));
  nlohmann::json old = j;
  old.erase("backend");
  CHECK(RunRecord::from_json(old).backend == "fast");
  nlohmann::json bad = j;
  bad["backend"] = "turbo";
  CHECK_THROWS_WITH(RunRecord::from_json(bad), Catch::Contains("backend is \"turbo\", not \"fast\" or \"reference\""));
}

TEST_CASE("compare_runs reports model and settings differences", "[run_record]") {
  RunRecord a = record({10}, {5.0f});
  RunRecord b = a;
  a.model_sha256 = std::string(64, 'a');
  b.model_sha256 = std::string(64, 'b');
  b.settings.temperature = 0.8f;
  b.settings.seed = 7;
  const RunComparison c = compare_runs(a, b);
  CHECK_FALSE(c.same_model);
  CHECK(c.setting_differences == std::vector<std::string>{"temperature 0 vs 0.8", "seed 0 vs 7"});
  b = a;
  CHECK(compare_runs(a, b).same_model);
  CHECK(compare_runs(a, b).setting_differences.empty());
}

TEST_CASE("compare_runs stops at different prompts: no logits compared", "[run_record]") {
  const RunRecord a = record({10, 11}, {5.0f, 6.0f});
  RunRecord b = record({10, 11}, {9.0f, 6.0f});
  b.prompt_ids = {1, 2, 4};
  const RunComparison c = compare_runs(a, b);
  CHECK_FALSE(c.same_prompt);
  CHECK(c.compared_steps == 0);
  CHECK(c.max_logit_diff == 0.0);
  CHECK_FALSE(c.identical_tokens());
}

TEST_CASE("sha256_file hashes a file's bytes", "[run_record]") {
  const auto dir = scratch("sha");
  const auto path = (dir / "abc").string();
  std::ofstream(path, std::ios::binary) << "abc";
  // FIPS 180-2, appendix B.1.
  CHECK(sha256_file(path) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  std::ofstream(path, std::ios::binary | std::ios::trunc).flush();
  CHECK(sha256_file(path) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK_THROWS(sha256_file((dir / "missing").string()));
  std::filesystem::remove_all(dir);
}

TEST_CASE("utf8::replace_invalid keeps valid text and replaces each broken sequence once", "[run_record]") {
  CHECK(utf8::replace_invalid("héllo €") == "héllo €");
  CHECK(utf8::replace_invalid("a\xFF" "b") == "a\xEF\xBF\xBD" "b");
  CHECK(utf8::replace_invalid("\xE2\x82") == "\xEF\xBF\xBD");              // a cut-off €: one replacement
  CHECK(utf8::replace_invalid("\xC0\xAF") == "\xEF\xBF\xBD\xEF\xBF\xBD");  // an overlong '/': two
  CHECK(utf8::replace_invalid("") == "");
}

// ---- malformed records (tests/fuzz/fuzz_record.cpp): refused in one line, never a crash ----

namespace {

// Reads `text` the way stage_diff does: from a file, with RunRecord::read.
RunRecord parse_record(const std::string& text) {
  const auto dir = scratch("malformed");
  struct Cleanup {
    std::filesystem::path dir;
    ~Cleanup() { std::filesystem::remove_all(dir); }
  } cleanup{dir};
  const std::string path = (dir / "r.json").string();
  std::ofstream(path, std::ios::binary) << text;
  return RunRecord::read(path);
}

}  // namespace

// A 400 KB file of nested brackets parsed fine (nlohmann's parser keeps its own stack), but
// copying the value into the record recursed once per level and overflowed the stack: stage_diff
// died with a segmentation fault. Records are a few levels deep; deeper input is refused.
TEST_CASE("a record nested thousands of levels deep is refused, not a stack overflow", "[run_record][fuzz]") {
  const int depth = 200000;
  const std::string deep = R"({"prompt_ids":[1],"steps":[],"figures":)" + std::string(depth, '[') + std::string(depth, ']') + "}";
  CHECK_THROWS_WITH(parse_record(deep), Catch::Contains("r.json: not a run record") && Catch::Contains("nested"));
  // A record as deep as real ones (figures: tables of rows of cells) still reads.
  CHECK_NOTHROW(parse_record(R"({"prompt_ids":[],"steps":[],"figures":{"t":[{"row":[[1,2],[3]]}]}})"));
}

namespace {

// A valid one-step record with `step_field` spliced into its step.
std::string with_step(const std::string& step_field) {
  return R"({"prompt_ids":[1,2],"steps":[{)" + step_field + R"(}]})";
}

}  // namespace

// Found by fuzz_record: a token id written as a number too large for an int (7.04e100) was
// converted with a plain cast, undefined behaviour that UBSan reports and a release build turns
// into an arbitrary id; and 2^32 + 1 became token 1 without a word.
TEST_CASE("a record's numbers must fit their fields or be refused", "[run_record][fuzz]") {
  const std::string top = R"("top":[[5,1.5]])";
  CHECK(parse_record(with_step(R"("token":5,)" + top)).tokens() == std::vector<int32_t>{5});
  CHECK(parse_record(with_step(R"("token":5.0,)" + top)).tokens() == std::vector<int32_t>{5});  // whole, if written as a real

  CHECK_THROWS_WITH(parse_record(with_step(R"("token":7.0421e100,)" + top)),
                    Catch::Contains("steps[0].token is 7.0421e+100, not a whole number"));
  CHECK_THROWS_WITH(parse_record(with_step(R"("token":4294967297,)" + top)), Catch::Contains("steps[0].token"));
  CHECK_THROWS_WITH(parse_record(with_step(R"("token":2.5,)" + top)), Catch::Contains("steps[0].token"));
  CHECK_THROWS_WITH(parse_record(with_step(R"("token":5,"top":[[1e300,1.5]])")), Catch::Contains("steps[0].top[0][0]"));
  CHECK_THROWS_WITH(parse_record(with_step(R"("token":5,"top":[[5,1e39]])")),
                    Catch::Contains("steps[0].top[0][1] is 1e+39, not a finite number"));  // beyond float: infinity
  CHECK_THROWS_WITH(parse_record(with_step(R"("token":5,"seconds":"slow",)" + top)), Catch::Contains("steps[0].seconds"));
  CHECK_THROWS_WITH(parse_record(R"({"prompt_ids":[1,-3e20],"steps":[]})"), Catch::Contains("prompt_ids[1]"));
  CHECK_THROWS_WITH(parse_record(R"({"prompt_ids":5,"steps":[]})"), Catch::Contains("prompt_ids is 5, not an array"));
  CHECK_THROWS_WITH(parse_record(R"({"prompt_ids":[],"steps":[],"prompt_bytes":[104,300]})"), Catch::Contains("prompt_bytes[1]"));
  CHECK_THROWS_WITH(parse_record(R"({"prompt_ids":[],"steps":[],"settings":{"seed":-1}})"), Catch::Contains("settings.seed"));
  CHECK_THROWS_WITH(parse_record(R"({"prompt_ids":[],"steps":[],"settings":{"top_k":1e10}})"), Catch::Contains("settings.top_k"));
  CHECK_THROWS_WITH(parse_record(R"({"prompt_ids":[],"steps":[],"settings":{"temperature":"hot"}})"),
                    Catch::Contains("settings.temperature is \"hot\", not a finite number"));
  // Every refusal names the file, in one line.
  CHECK_THROWS_WITH(parse_record(R"({"prompt_ids":[],"steps":[],"settings":{"seed":-1}})"), Catch::Contains("/r.json: not a run record ("));
}
