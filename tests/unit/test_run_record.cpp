// RunRecord and compare_runs: the logic behind stage_diff, on hand-made records.
#include <catch2/catch.hpp>

#include "app/run_record.hpp"

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
