// Width pruning: which attention heads and MLP neurons a width-pruned student keeps, measured on
// calibration text, and the student sliced from the teacher with only those.
//
// Depth pruning (layer_importance.hpp) removes whole blocks; width pruning keeps every block and
// makes each one narrower. Minitron (Muralidharan et al. 2024) ranks the parts of a block by their
// activations on a small calibration set — one forward pass, no gradients:
//
//   KV group g of a layer   mean over tokens of ‖o_g‖₂, where o_g is the attention output of the
//                           group's query heads (before W_o: the H/H_kv heads that share key/value
//                           head g, their outputs side by side)
//   MLP neuron j            mean over tokens of |a_j|, a = silu(h·W_gateᵀ) ⊙ (h·W_upᵀ): the SwiGLU
//                           product that W_down reads
//
// A head whose output is small adds little to the stream through W_o; a neuron whose product is
// near zero on real text is a column of W_down that is rarely read. Both are what the pruned model
// loses if the part goes, to first order — cheaper than removing each part and measuring the loss.
//
// The unit of attention is the whole group (a key/value head with its query heads), not a single
// query head: removing a query head from some groups only would leave groups of unequal size, and
// the student would no longer be the plain grouped-query Llama that every chapter loads. For the
// same reason every layer keeps the same numbers of groups and of neurons — its own most important
// ones — so the student has one config (fewer heads, a narrower MLP) and saves as a standard GGUF.
// The residual width d, the head size, the norms, the embedding and the head stay the teacher's.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "model/config.hpp"
#include "student.hpp"

namespace infer::train {

struct WidthImportance {
  std::vector<std::vector<double>> group;   // [layer][KV group]: mean ‖attention output of the group‖₂
  std::vector<std::vector<double>> neuron;  // [layer][MLP neuron]: mean |silu(gate) · up|
};

// One pass of `model` over the whole sequences of S tokens in `tokens`, one sequence at a time
// (the same calibration windows as block_influence).
WidthImportance width_importance(Student<float>& model, std::span<const int32_t> tokens, int S);

// The kept parts of every layer, ascending; every layer keeps as many groups and as many neurons.
struct WidthCut {
  std::vector<std::vector<int>> groups;   // [layer] kept key/value heads (each with its query heads)
  std::vector<std::vector<int>> neurons;  // [layer] kept MLP neurons
};
enum class WidthChoice {
  most_important,   // the cut of the recipe
  least_important,  // the control: the ranking reversed
  random,           // the control: no ranking
};
// n_groups groups and n_neurons neurons per layer, chosen by the scores (ties: the lower index)
// or, for WidthChoice::random, drawn from `seed`.
WidthCut width_cut(const WidthImportance& importance, int n_groups, int n_neurons, WidthChoice choice,
                   uint64_t seed = 0);
// Every group and neuron of `c`: the cut that changes nothing.
WidthCut full_width(const LlamaConfig& c);

// The teacher's shape with n_groups key/value heads (and their query heads) and an MLP of n_neurons.
LlamaConfig width_config(const LlamaConfig& c, int n_groups, int n_neurons);

// The student with the cut's parts of `full` (the teacher in training form, or any student): the
// rows of W_q, W_k, W_v and the columns of W_o of the kept heads, the rows of W_gate, W_up and the
// columns of W_down of the kept neurons; norms, embedding and head copied. Throws
// std::invalid_argument for a cut that does not fit `full`.
template <class T>
Student<T> width_pruned(const Student<T>& full, const WidthCut& cut);

// The width with about `parameters` in all (LlamaConfig::parameter_count) at the teacher's depth:
// `groups` groups per layer (0: the count whose share of the teacher's groups is closest to the
// share of neurons that then matches, so attention and MLP shrink alike) and the number of
// neurons that comes closest. neurons = 0 when no width of at least one neuron fits.
struct WidthShape {
  int groups = 0, neurons = 0;
};
WidthShape matched_width(const LlamaConfig& teacher, int64_t parameters, int groups = 0);

}  // namespace infer::train
