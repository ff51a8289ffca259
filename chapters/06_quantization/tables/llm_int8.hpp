// Chapter 06's study: LLM.int8()'s mixed-precision decomposition (Dettmers et al., "LLM.int8():
// 8-bit Matrix Multiplication for Transformers at Scale", arXiv:2208.07339), simulated.
//
// W8A8 (w8a8.hpp) rounds every token's row of x to int8 with one step, max|x_t|/127, so the few
// outlier feature dimensions set the step for all the others. LLM.int8 takes those dimensions
// out of the integer product instead of rescaling them (SmoothQuant's answer, smoothing.hpp). At
// every forward call it looks at the x it is given:
//
//   O        = { columns j of x [N, in] with |x[t, j]| ≥ threshold for some row t }     (6.0 in the paper)
//   x·Wᵀ    ≈ x[:, O]·W[:, O]ᵀ                         in fp32, the outlier columns at full precision
//            + fake_int8(x with the columns O set to 0)·Ŵᵀ    the W8A8 layer's own product, unchanged
//
// Set to zero, the outlier columns no longer count in a token's max|x_t|, so the other columns
// get a step set by ordinary values. O is chosen afresh from each call's x: it is not calibrated,
// and a layer that may pick any column must be able to multiply any column at full precision.
//
// Where W[:, O] comes from is a storage decision, and the two choices cost differently:
//   the original weights  what the decomposition above writes: the layer keeps W as well as its
//                         INT8 copy (here fp32, 4 bytes a weight on top of the INT8 byte);
//   the INT8 weights Ŵ   decoded back to floats: only the activations' outliers stay at full
//                         precision, and nothing is stored beyond W8A8's bytes. bitsandbytes'
//                         inference layer (int8 weights without an fp16 copy) does this.
// Both are rows of the quality table, so the difference is the price of those extra bytes.
//
// Simulated as W8A8 is: the int8 operands are rounded to their grids and multiplied in fp32.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "measure/table.hpp"
#include "model/linear.hpp"
#include "quantize_model.hpp"
#include "smoothing.hpp"
#include "w8a8.hpp"

namespace infer::quant {

// The outlier columns of x [rows, cols] (row-major): every j with |x[t, j]| ≥ threshold in some
// row t, in increasing order. A threshold of 0 selects every column, +∞ none.
std::vector<int64_t> outlier_columns(const Tensor& x, float threshold);

// What one layer's forward calls flagged. Its calls come one at a time (the forward pass is
// sequential; the kernels are what run in parallel), so the counts are plain integers.
struct OutlierCounts {
  int64_t in_features = 0, out_features = 0;
  int64_t calls = 0;
  int64_t columns = 0;           // Σ in_features over the calls
  int64_t outlier_columns = 0;   // Σ |O| over the calls
  int64_t elements = 0;          // Σ rows · in_features: the x values multiplied
  int64_t outlier_elements = 0;  // Σ rows · |O|: those multiplied in fp32
  std::vector<int64_t> calls_flagged;  // per input column: in how many calls it was in O
};

class LlmInt8Linear : public Linear {
 public:
  // int8_weights: Ŵ [out, in], the INT8 per-row round trip of W that W8A8Linear multiplies.
  // column_weights: the [out, in] matrix whose columns multiply the outlier columns of x — W
  // itself, or Ŵ (the same tensor: then nothing is stored twice). counts: optional, kept by
  // the caller for as long as the layer runs.
  LlmInt8Linear(Tensor int8_weights, Tensor column_weights, float threshold, OutlierCounts* counts = nullptr);

  // y = x[:, O]·column_weights[:, O]ᵀ + W8A8(x with the columns O zeroed); with O empty, exactly W8A8.
  void forward(const Tensor& x, Tensor& y) const override;
  int64_t in_features() const override { return int8_.in_features(); }
  int64_t out_features() const override { return int8_.out_features(); }
  // W8A8's INT8 bytes, plus the column matrix's own bytes when it is not Ŵ.
  std::size_t weight_bytes() const override;
  std::string storage() const override { return "LLM.int8"; }

 private:
  W8A8Linear int8_;
  Tensor columns_;
  bool separate_columns_;
  float threshold_;
  OutlierCounts* counts_;
};

// Where the outlier columns' weights come from (see the top of this file).
enum class OutlierWeights { original, int8 };

// The W8A8 model (quantize_model_w8a8, no smoothing) with every projection wrapped as an
// LlmInt8Linear. counts is resized to one entry per projection, in projection_matrices() order;
// it must outlive the model's use of these layers and not be resized meanwhile.
QuantizedModel quantize_model_llm_int8(Llama& model, const ReferenceWeights& reference, float threshold,
                                       OutlierWeights source, std::vector<OutlierCounts>& counts,
                                       const std::string& name);

// The table of what was flagged, by the input the projections read (q/k/v, o, gate/up, down):
// the share of columns per call and of the products done in fp32 over the run that filled
// `counts`, the columns flagged at least once (and what keeping just those in fp32 would
// cost), and — from the calibration pass's per-column maxima, for free — the share a 512-token
// call flags at each of `thresholds`. Adds its figures to figures["llm_int8"].
Table outlier_column_table(const std::vector<OutlierCounts>& counts, float threshold, const InputMaxima& calibration,
                           const std::vector<float>& thresholds, nlohmann::json& figures);

}  // namespace infer::quant
