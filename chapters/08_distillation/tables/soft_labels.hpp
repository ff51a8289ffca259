// Table 1 of chapter 08: what a soft label is. The teacher's five most likely next tokens after a
// few phrases, and how a temperature T flattens them: p_T(i) = softmax(z / T)_i, so the ratio of
// two probabilities is exp((z_i − z_j) / T) — at T = 2 the square root of the ratio at T = 1.
#pragma once

#include <nlohmann/json.hpp>

#include "app/cli.hpp"

namespace infer::distill {

// The course's phrase "She poured the milk into the" and two more.
// k: the teacher logits the offline label file keeps per position.
void print_soft_label_tables(LoadedModel& teacher, const CommonOptions& options, int k, nlohmann::json& figures);

}  // namespace infer::distill
