// Chapter 07's tree table (--tree): the same drafts verifying a linear draft of γ guesses and
// trees of several shapes — tokens per target pass, guesses kept, what a pass over the tree
// costs against a decode step, and the measured speed-up over plain decoding and over linear.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli.hpp"

namespace infer::spec {

struct TreeTableOptions {
  std::vector<std::string> drafts = {"q4_1", "layers-10"};  // drafts that reject often enough for a tree to matter
  std::vector<std::string> shapes = {"1x1x1x1", "2x1x1x1", "3x1x1x1", "2x2x1x1", "3x2x1", "5x2"};
  int gamma = 4;  // the linear draft's
  int repeats = 3;
};

// Tree verification is greedy, without the repetition penalty, on the CPU: throws UsageError
// with one line otherwise.
void check_tree_options(const CommonOptions& o);

// Prints the table (and appends it to --csv); fills figures["tree"].
void tree_table(LoadedModel& m, const CommonOptions& o, const TreeTableOptions& t, nlohmann::json& figures);

}  // namespace infer::spec
