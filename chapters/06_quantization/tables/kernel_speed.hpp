// Chapter 06's study: what the kernels buy — the speed table.
//
// Decode streams every weight once per token, so its time is bytes over bandwidth: the table
// puts beside each format its model bytes, bits per weight, decode tokens/s at a given
// context, the weight bytes that decode streams per second as a fraction of the machine's
// measured read bandwidth, prefill tokens/s (arithmetic-bound instead), and the speed-ups over
// fp32. The fp32 model and one packed copy per format (packed_copy) are all held at once and
// timed in turn, round after round, so that whatever else the machine does slows them alike;
// every figure is a median over the rounds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "app/cli.hpp"
#include "measure/bandwidth.hpp"
#include "measure/table.hpp"
#include "model/llama.hpp"
#include "packed_kernels.hpp"
#include "tokenizer/tokenizer.hpp"

namespace infer::quant {

struct SpeedOptions {
  int64_t context = 128;          // decode: one token against a cache of this many
  int64_t prefill_tokens = 256;   // prefill: a prompt of this many tokens in one pass
  int rounds = 3;                 // every model is timed once per round, the models in turn
  int decode_steps = 9;           // decode steps timed per model per round
  int prefill_repeats = 1;        // prefills timed per model per round
};

// One packed model to time: its format and what its kernels multiply the weights with.
struct PackedKernel {
  PackedFormat format;
  Activations activations = Activations::fp32;
};
// Every format with fp32 activations, then the formats that have an int8-activation kernel
// (q8_0, q4_1, nf4) with int8 ones: the rows of ch06_quantization --speed.
std::vector<PackedKernel> every_packed_kernel();

struct SpeedRow {
  std::string scheme;              // "fp32", or the scheme's name ("NF4")
  std::string flag;                // "" for fp32, else format_flag ("nf4")
  std::string activations = "fp32";  // "int8": x rounded to int8 for decode (int8_activations.hpp)
  int64_t model_bytes = 0;         // LlamaWeights::bytes_held(): what the weights occupy
  double bits_per_weight = 32;     // over the quantized matrices (fp32: 32)
  int64_t bytes_per_token = 0;     // LlamaWeights::bytes_per_token(): what one decode step reads
  double decode_seconds = 0;       // median decode step
  double prefill_seconds = 0;      // median prefill of prefill_tokens
};

// Times the fp32 `model` and a packed copy of it for each of `kernels`. The model must hold
// dense fp32 weights on the CPU (it is left as it came). `bandwidth` gets the plain read loop's
// bandwidth timed in the same rounds (one pass before each model's decode steps), so that a
// row's share of it compares the same minutes.
std::vector<SpeedRow> measure_speed(Llama& model, const Tokenizer& tokenizer, const std::vector<PackedKernel>& kernels,
                                    const SpeedOptions& options, BandwidthResult& bandwidth);

// The table of those rows (rows[0] is the fp32 reference), with the read bandwidth and thread
// count it was measured at.
Table speed_table(const std::vector<SpeedRow>& rows, const SpeedOptions& options, const BandwidthResult& bandwidth);

// The run's machine and rows as a JSON record (figures["machine"], figures["speed"]): what the
// course report and compare_llama_cpp.py read.
void speed_figures(const std::vector<SpeedRow>& rows, const SpeedOptions& options, const BandwidthResult& bandwidth,
                   nlohmann::json& figures);

// ch06_quantization --speed: measures the bandwidth and every format's speed, prints the table.
void speed_tables(LoadedModel& m, const CommonOptions& o, const SpeedOptions& s, nlohmann::json& figures);

}  // namespace infer::quant
