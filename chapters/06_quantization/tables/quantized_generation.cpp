#include "quantized_generation.hpp"

#include <cstdio>
#include <functional>

#include <fmt/format.h>

#include "app/text_streamer.hpp"
#include "02_kv_cache/cached_generate.hpp"
#include "03_gqa/grouped_kv_cache.hpp"
#include "measure/table.hpp"  // format_bytes
#include "measure/timing.hpp"
#include "pack_model.hpp"
#include "tensor/ops.hpp"  // num_threads

namespace infer::quant {

// --quant: every matrix packed, the text generated with chapter 02's loop and chapter 03's
// cache, streamed as it comes.
void generate_quantized(LoadedModel& m, const CommonOptions& o, PackedFormat format, Activations activations,
                        RunRecord& record) {
  record.prompt_ids = encode_prompt(m, o);  // first: a prompt that does not fit is refused before the packing
  const QuantizedModel info = quantize_for_kernels(m.model, format, activations);
  fmt::print(stderr, "packed every matrix as {} ({:.3f} bits/weight): the weights now take {}, in {:.1f} s; {} activations\n",
             info.scheme, info.bits_per_weight(), format_bytes(m.model.weights().bytes_held()), info.seconds,
             activations_name(activations));
  GroupedKvCache cache(m.model.config(), std::ssize(record.prompt_ids) + o.n_predict, m.model.device());
  Sampler sampler(o.sampling);
  sampler.accept(record.prompt_ids);  // --repeat-penalty counts the prompt too, as llama.cpp does
  TextStreamer stream(m.tokenizer, record.text);
  std::fputs(o.chat ? "" : o.prompt.c_str(), stdout);
  std::fflush(stdout);
  const GenerateOptions options{.n_predict = o.n_predict, .stop_at_end = true, .top_logits = 5};
  const Generation gen = generate_cached(m.model, m.tokenizer, record.prompt_ids, cache, sampler, options, std::ref(stream));
  stream.finish();
  record.steps = gen.steps;
  std::vector<double> decode;
  for (std::size_t i = 1; i < gen.steps.size(); ++i) decode.push_back(gen.steps[i].seconds);
  const double ttft = gen.steps.empty() ? 0 : gen.steps[0].seconds;
  const double tps = decode.empty() ? 0 : 1.0 / median(decode);
  fmt::print("{} tokens through the {} kernels, {} activations ({} threads): time to first token {:.1f} ms, decode {:.1f} tokens/s "
             "(median step)\n", gen.steps.size(), info.scheme, activations_name(activations), num_threads(), 1e3 * ttft, tps);
  record.figures["quant"] = {{"scheme", info.scheme}, {"flag", format_flag(format)},
                             {"activations", activations_name(activations)}, {"bits_per_weight", info.bits_per_weight()},
                             {"weight_bytes", m.model.weights().bytes_held()}, {"ttft_s", ttft}, {"decode_tokens_per_s", tps}};
}

}  // namespace infer::quant
