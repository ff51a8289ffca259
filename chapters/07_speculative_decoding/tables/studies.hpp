// Chapter 07's tables from real runs: the cost of verifying, each draft's α and c and what it
// buys, α beside chapter 06's agreement, the γ sweep against the formula, and α by kind of text.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli.hpp"
#include "drafter.hpp"
#include "measure/table.hpp"
#include "speedup.hpp"
#include "06_quantization/tables/agreement.hpp"

namespace infer::spec {

struct StudyOptions {
  std::vector<std::string> drafts;  // names (make_drafter.hpp)
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
  std::string label;                 // in the records: the flag, or a --draft-model's file name
  std::unique_ptr<Drafter> drafter;
  double c = 0;                      // seconds per guess ÷ target decode step
  double bytes_per_guess = 0;        // weight bytes a guess streams (0: no model)
  double speedup = 0;                // at StudyOptions::gamma on the default prompt
  int best_gamma = 0;                // from the sweep (0: not swept)
};

// A table row filled by column name: a cell cannot land under another column's header, as a
// row counted out by hand can when a column is added (set() throws for a name not in the headers).
class NamedRow {
 public:
  explicit NamedRow(std::vector<std::string> headers) : headers_(std::move(headers)), cells_(headers_.size()) {}
  NamedRow& set(std::string_view header, std::string cell);
  std::vector<std::string> cells() const { return cells_; }

 private:
  std::vector<std::string> headers_;
  std::vector<std::string> cells_;  // "" for a column not set
};

// One draft's row of the per-draft table, as measured.
struct DraftResult {
  std::string name;
  double bytes_per_guess = 0, c = 0, predicted = 0;
  Timed run;
};
// The per-draft table at γ = `gamma`: plain decoding's row (its speed, 1.00×), then each draft's.
Table draft_table(const std::string& title, int gamma, const Timed& plain, std::span<const DraftResult> drafts,
                  bool greedy);

class SpeculationStudy {
 public:
  SpeculationStudy(LoadedModel& m, const CommonOptions& o, StudyOptions s, nlohmann::json& figures);
  void run();  // prints every table, the formulas first; fills figures

 private:
  void verify_cost_table();
  void per_draft_table();
  void agreement_table();
  void gamma_sweep();
  void texts_table();
  std::vector<MeasuredDraft*> swept_drafts();

  LoadedModel& m_;
  const CommonOptions& o_;
  StudyOptions s_;
  nlohmann::json& figures_;
  std::vector<int32_t> prompt_;
  std::optional<quant::GreedyReference> agreement_;  // chapter 06's positions (greedy runs on the CPU only)
  MeasuredCosts costs_;
  std::vector<MeasuredDraft> drafts_;
};

}  // namespace infer::spec
