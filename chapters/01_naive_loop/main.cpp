// ch01_naive_loop — generate text by feeding the whole sequence through the model at every step.
//
//   ch01_naive_loop                         the demo: a default prompt, 32 tokens, cost per step
//   ch01_naive_loop -p "..." -n 64 --chat   your prompt, in the chat template
//   ch01_naive_loop --sweep                 how one step's cost grows with the sequence length
#include <cmath>
#include <cstdio>
#include <string_view>

#include <fmt/format.h>

#include "app/cli.hpp"
#include "app/run_record.hpp"
#include "app/text_streamer.hpp"
#include "forward_cost.hpp"
#include "measure/bandwidth.hpp"
#include "measure/table.hpp"
#include "measure/timing.hpp"
#include "naive_generate.hpp"
#include "tensor/ops.hpp"

using namespace infer;

namespace {

// Least-squares slope of log(y) against log(x): y ≈ c·x^slope.
double fitted_exponent(const std::vector<double>& x, const std::vector<double>& y) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double n = static_cast<double>(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double lx = std::log(x[i]), ly = std::log(y[i]);
    sx += lx; sy += ly; sxx += lx * lx; sxy += lx * ly;
  }
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

void print_steps(const Generation& gen, const CommonOptions& o, nlohmann::json& figures) {
  Table table("Cost of each step (the whole sequence goes through the model every time)",
              {"step", "seq len", "time", "MACs counted", "MACs formula", "equal"});
  double total_seconds = 0;
  int64_t total_macs = 0;
  bool all_equal = true;
  for (std::size_t i = 0; i < gen.steps.size(); ++i) {
    const StepCost& c = gen.costs[i];
    const bool equal = c.macs_counted == c.macs_formula;
    all_equal = all_equal && equal;
    total_seconds += gen.steps[i].seconds;
    total_macs += c.macs_counted;
    table.add_row({std::to_string(i + 1), std::to_string(c.seq_len), format_seconds(gen.steps[i].seconds),
                   format_count(static_cast<double>(c.macs_counted)),
                   format_count(static_cast<double>(c.macs_formula)), equal ? "yes" : "NO"});
  }
  const double n = static_cast<double>(gen.steps.size());
  table.add_note(fmt::format("total: {} tokens in {}, {:.2f} tokens/s, {} MACs ({:.2f} GMAC/s)",
                             gen.steps.size(), format_seconds(total_seconds), n / total_seconds,
                             format_count(static_cast<double>(total_macs)), total_macs / total_seconds / 1e9));
  table.add_note(all_equal ? "every counted MAC total equals the closed form of forward_cost.hpp"
                           : "MISMATCH between counted MACs and the closed form");
  table.emit(o.csv_path);
  figures["total_seconds"] = total_seconds;
  figures["tokens_per_second"] = n / total_seconds;
  figures["total_macs"] = total_macs;
  figures["macs_match_formula"] = all_equal;
  if (!all_equal) throw std::runtime_error("counted MACs differ from the closed-form count");
}

void run_sweep(LoadedModel& m, const CommonOptions& o, int repeats, nlohmann::json& figures) {
  const LlamaConfig& c = m.model.config();
  NoCache no_cache(c);
  // A real token sequence, repeated as needed to reach each length.
  const std::string_view text =
      "The naive loop recomputes every position at every step, so a step over a longer sequence "
      "costs more, and the cost of the attention part grows with the square of the length. ";
  Table table(fmt::format("One naive step (a forward pass over T tokens), median of {} runs, {} threads", repeats, num_threads()),
              {"T (tokens)", "time", "time / T", "GMACs", "attention share", "GMAC/s"});
  std::vector<double> lengths, times, macs;
  for (int T : {16, 32, 64, 128, 256, 512}) {
    const std::vector<int32_t> tokens = repeated_tokens(m.tokenizer, text, T);
    const double seconds = median_seconds(repeats, [&] { m.model.forward(tokens, 0, no_cache); });
    const ForwardCost cost = forward_cost(c, T, 0, 1);
    lengths.push_back(T);
    times.push_back(seconds);
    macs.push_back(static_cast<double>(cost.total()));
    table.add_row({std::to_string(T), format_seconds(seconds), format_seconds(seconds / T),
                   fmt::format("{:.2f}", static_cast<double>(cost.total()) / 1e9),
                   fmt::format("{:.1f}%", 100.0 * static_cast<double>(cost.attention_macs) / static_cast<double>(cost.total())),
                   fmt::format("{:.1f}", static_cast<double>(cost.total()) / seconds / 1e9)});
    figures["sweep"].push_back({{"T", T}, {"seconds", seconds}, {"macs", cost.total()}});
  }
  const double time_exp = fitted_exponent(lengths, times), mac_exp = fitted_exponent(lengths, macs);
  table.add_note(fmt::format("fitted: step time ∝ T^{:.2f}, step MACs ∝ T^{:.2f} over T = 16…512", time_exp, mac_exp));
  table.add_note("Linear layers cost T·(weights) and attention T²·(2·H·D·layers/2): the exponent starts near 1 and "
                 "rises towards 2 as attention takes over; summed over a generation of T tokens the naive loop costs O(T³) in attention.");
  table.emit(o.csv_path);
  figures["sweep_time_exponent"] = time_exp;
  figures["sweep_mac_exponent"] = mac_exp;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Chapter 01: the naive generation loop — the whole sequence goes through the model at every step"};
  CommonOptions o;
  o.prompt = "The three most important ideas in computer science are";
  o.n_predict = 32;
  bool sweep = false;
  int repeats = 3;
  add_common_options(app, o);
  app.add_flag("--sweep", sweep, "time one step for sequence lengths 16 … 512 and fit the growth exponent");
  app.add_option("--repeats", repeats, "--sweep: repeats per timing (the median is reported)")
      ->check(whole_number(1))->capture_default_str();

  return run_main(app, argc, argv, [&] {
    if (sweep)
      refuse_flags(app, "--sweep", {"--prompt", "--n-predict", "--chat", "--seed", "--temp", "--top-k", "--top-p"});
    else
      refuse_flags(app, "the demo (without --sweep)", {"--repeats"});
    LoadedModel m = load_model(o);
    if (sweep) {
      RunRecord record = new_record("ch01_naive_loop", o, "tables");
      run_sweep(m, o, repeats, record.figures);
      save_record(record, o, &m.tokenizer);
      return;
    }
    RunRecord record = new_record("ch01_naive_loop", o);
    record.prompt_ids = encode_prompt(m, o);
    Sampler sampler(o.sampling);
    TextStreamer stream(m.tokenizer, record.text);
    std::fputs(o.chat ? "" : o.prompt.c_str(), stdout);
    std::fflush(stdout);
    const Generation gen = generate_naive(
        m.model, m.tokenizer, record.prompt_ids, sampler,
        GenerateOptions{.n_predict = o.n_predict, .stop_at_end = true, .top_logits = 5}, std::ref(stream));
    stream.finish();
    record.steps = gen.steps;
    print_steps(gen, o, record.figures);
    save_record(record, o, &m.tokenizer);
  });
}
