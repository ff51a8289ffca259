// Chapter 07's tables from real runs: the cost of verifying, each draft's α and c and what it
// buys, the γ sweep against the formula, and α by kind of text.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli.hpp"
#include "drafter.hpp"
#include "measure.hpp"

namespace infer::spec {

struct StudyOptions {
  std::vector<std::string> drafts;  // names (drafts.hpp)
  std::string draft_model;          // for "file"
  int gamma = 4;                    // γ of the per-draft table and the texts table
  std::vector<int> gammas;          // the sweep
  int repeats = 3;
  std::string plot_path;
};

// A kind of text with its prompt, for "α is a number measured on your traffic".
struct TextKind {
  std::string name;
  std::vector<int32_t> prompt;
};
std::vector<TextKind> text_kinds(const LoadedModel& m);

// One measured draft.
struct MeasuredDraft {
  std::string flag;                  // as given on the command line
  std::unique_ptr<Drafter> drafter;
  double c = 0;                      // seconds per guess ÷ target decode step
  double bytes_per_guess = 0;        // weight bytes a guess streams (0: no model)
  double speedup = 0;                // at StudyOptions::gamma on the default prompt
  int best_gamma = 0;                // from the sweep (0: not swept)
};

class SpeculationStudy {
 public:
  SpeculationStudy(LoadedModel& m, const CommonOptions& o, StudyOptions s, nlohmann::json& figures);
  void run();  // prints every table; fills figures

 private:
  void verify_cost_table();
  void per_draft_table();
  void gamma_sweep();
  void texts_table();
  std::vector<MeasuredDraft*> swept_drafts();

  LoadedModel& m_;
  const CommonOptions& o_;
  StudyOptions s_;
  nlohmann::json& figures_;
  std::vector<int32_t> prompt_;
  MeasuredCosts costs_;
  std::vector<MeasuredDraft> drafts_;
};

}  // namespace infer::spec
