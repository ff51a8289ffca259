#include "int8_quality.hpp"

#include <fmt/format.h>

#include "03_gqa/grouped_kv_cache.hpp"
#include "eval/evaluation.hpp"
#include "int8_activations.hpp"
#include "pack_model.hpp"

namespace infer::quant {

std::vector<Int8QualityRow> measure_int8_quality(LoadedModel& m, int64_t eval_tokens, int64_t window) {
  std::vector<int32_t> tokens = m.tokenizer.encode(held_out_text(read_eval_text()), /*parse_special=*/false);
  if (eval_tokens < std::ssize(tokens)) tokens.resize(eval_tokens);
  const ReferenceWeights reference = keep_reference(m.model);
  std::vector<Int8QualityRow> rows;
  for (PackedFormat f : kPackedFormats) {
    if (!has_int8_activation_kernel(f)) continue;
    Int8QualityRow row;
    TextEvaluation eval[2];
    for (Activations a : {Activations::fp32, Activations::int8}) {
      QuantizedModel info;
      Llama packed = packed_copy(m.model, reference, f, &info, a);
      row.scheme = info.scheme;
      // 16 tokens per call: every product is decode-sized (n < 32), where the int8 kernels run.
      const EvalOptions options{.window = window, .chunk = 16,
                                .progress_label = fmt::format("{}, {} activations", info.scheme, activations_name(a))};
      eval[a == Activations::int8] = evaluate_text<GroupedKvCache>(packed, tokens, options);
    }
    row.perplexity_fp32 = eval[0].perplexity();
    row.perplexity_int8 = eval[1].perplexity();
    const Agreement agree = greedy_agreement(eval[0], eval[1]);
    row.agreement = agree.rate();
    row.positions = agree.positions;
    rows.push_back(row);
  }
  return rows;
}

Table int8_quality_table(const std::vector<Int8QualityRow>& rows, int64_t window) {
  Table t("What 8-bit activations cost: the same packed weights, x in fp32 or rounded to int8",
          {"scheme", "perplexity, fp32 x", "perplexity, int8 x", "change", "same greedy token", "positions"});
  for (const Int8QualityRow& r : rows)
    t.add_row({r.scheme, fmt::format("{:.3f}", r.perplexity_fp32), fmt::format("{:.3f}", r.perplexity_int8),
               fmt::format("{:+.2f}%", 100.0 * (r.perplexity_int8 / r.perplexity_fp32 - 1.0)),
               fmt::format("{:.1f}%", 100.0 * r.agreement), fmt::format("{}", r.positions)});
  t.add_note(fmt::format("held-out text (the book of Ruth), windows of {} tokens fed 16 per forward call, so that every "
                         "matrix product is decode-sized (n = 16 < 32) and the int8 kernels run; same greedy token: "
                         "both models' most likely next token agree at that position.", window));
  t.add_note("int8 x: each block of 32 activations rounded to its own max|x| / 127 (int8_activations.hpp); a "
             "product's error is at most Σ |ŵ − m|·dx/2 over its terms, tested in test_int8_activations.cpp.");
  return t;
}

void int8_quality_section(LoadedModel& m, int64_t eval_tokens, int64_t window, const CommonOptions& o, nlohmann::json& figures) {
  const std::vector<Int8QualityRow> rows = measure_int8_quality(m, eval_tokens, window);
  int8_quality_table(rows, window).emit(o.csv_path);
  for (const Int8QualityRow& r : rows)
    figures["int8_quality"].push_back({{"scheme", r.scheme}, {"perplexity_fp32", r.perplexity_fp32},
                                       {"perplexity_int8", r.perplexity_int8}, {"agreement", r.agreement},
                                       {"positions", r.positions}, {"window", window}});
}

}  // namespace infer::quant
