// Exercise 01 — attention in tiles with an online softmax (the idea of FlashAttention).
#pragma once

#include <vector>

namespace exercise {

// q, k, v: T rows of D floats each, row-major (element [t][i] at t*D + i). Returns out, T rows of
// D floats: the causal attention of exercise 01_causal_attention,
//   out[t] = Σ_{j≤t} softmax_j(q[t]·k[j]/√D) · v[j],
// but computed the way a GPU kernel that never holds a whole row of scores does: the keys and
// values of positions 0 … t are visited in tiles of `tile` consecutive positions (the last tile
// of a row may be shorter), and for each query only a running maximum m, a running sum ℓ of
// exp(score − m) and a running weighted sum of values o are kept. When a tile raises the maximum,
// ℓ and o are rescaled by exp(m_old − m_new). At the end, out[t] = o / ℓ.
// No buffer of more than `tile` scores may be used. Throws std::invalid_argument for tile < 1.
std::vector<float> tiled_attention(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v,
                                   int T, int D, int tile);

}  // namespace exercise
