// Chapter 08's data split: the training text and chapter 03's held-out book cut one file in two,
// with nothing shared, and the real file's held-out book never reaches training.
#include "catch_compat.hpp"

#include <cstdlib>
#include <filesystem>
#include <string>

#include "eval/evaluation.hpp"
#include "training_text.hpp"

using namespace infer;

TEST_CASE("training_text and held_out_text cut the text at the line \"Ruth\"", "[training]") {
  const std::string text = "Genesis\n\nIn the beginning.\n\nJudges\n\nAfter the death.\n\nRuth\n\nIn the days.\nThe end.\n";
  const std::string train = training_text(text), held = held_out_text(text);
  CHECK(train == "Genesis\n\nIn the beginning.\n\nJudges\n\nAfter the death.\n");
  CHECK(held == "In the days.\nThe end.\n");
  CHECK(train + "\nRuth\n\n" + held == text);  // together they are the whole file, marker aside
  CHECK_THROWS(training_text("Genesis\n\nno held-out book here\n"));
}

TEST_CASE("the real training text holds none of Ruth", "[training][model]") {
  if (!std::filesystem::exists(eval_text_path())) {  // as a missing model: fails in CI, skips elsewhere
    const char* ci = std::getenv("CI");
    if (ci != nullptr && std::string(ci) == "true") FAIL("evaluation text missing: run data/fetch_eval_text.sh");
    WARN("evaluation text missing: run data/fetch_eval_text.sh (test skipped)");
    return;
  }
  const std::string text = read_eval_text();
  const std::string train = training_text(text), held = held_out_text(text);
  CHECK(train.find("Naomi") == std::string::npos);  // Ruth's mother-in-law appears in no earlier book
  CHECK(held.find("Naomi") != std::string::npos);
  CHECK(train.size() + held.size() + 7 == text.size());
}
