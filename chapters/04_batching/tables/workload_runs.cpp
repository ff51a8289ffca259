#include "workload_runs.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "measure/progress.hpp"
#include "measure/timing.hpp"
#include "simulate.hpp"
#include "workload.hpp"

namespace infer::batching {
namespace {

// ---- table 3 and 4: the workload, real and simulated ----

// Wraps the real engine to advance a progress bar by the tokens each step keeps.
class ProgressEngine : public StepEngine {
 public:
  ProgressEngine(StepEngine& inner, ProgressBar& bar) : inner_(inner), bar_(bar) {}
  void admit(const Request& r, int new_tokens) override { inner_.admit(r, new_tokens); }
  std::vector<int32_t> step(std::span<Request* const> batch) override {
    const auto useful = std::count_if(batch.begin(), batch.end(), [](const Request* r) { return !r->done(); });
    std::vector<int32_t> next = inner_.step(batch);
    bar_.advance(useful);
    return next;
  }
  void release(const Request& r) override { inner_.release(r); }

 private:
  StepEngine& inner_;
  ProgressBar& bar_;
};

PolicyRun run_real(const Context& cx, Policy policy, const std::vector<Request>& requests, int64_t total_tokens) {
  BatchDecoder decoder(cx.m.model, cx.o.sampling);
  ProgressBar bar(fmt::format("workload, {} batching, real", policy_name(policy)), total_tokens);
  ProgressEngine engine(decoder, bar);
  WallClock clock;
  PolicyRun run = serve(policy, requests, cx.s.slots, engine, clock);
  bar.done();
  return run;
}

json summary_json(const ServeSummary& s) {
  return {{"requests", s.requests}, {"tokens", s.tokens}, {"total_seconds", s.total_seconds}, {"throughput", s.throughput},
          {"mean_latency", s.mean_latency}, {"p50_latency", s.p50_latency}, {"p99_latency", s.p99_latency},
          {"mean_ttft", s.mean_ttft}, {"p50_ttft", s.p50_ttft}, {"p99_ttft", s.p99_ttft}, {"steps", s.steps},
          {"mean_batch", s.mean_batch()}, {"padding_rows", s.padding_rows}};
}

// The run as the report's timeline draws it: per slot, the stretches of consecutive steps in
// which one request did one kind of thing (prefill, decode, padding), with their clock times.
json timeline_json(const PolicyRun& run) {
  json segments = json::array();
  const std::size_t slots = run.steps.empty() ? 0 : run.steps.front().slots.size();
  for (std::size_t slot = 0; slot < slots; ++slot) {
    for (std::size_t i = 0; i < run.steps.size();) {
      const SlotUse use = run.steps[i].slots.at(slot);
      std::size_t j = i + 1;
      while (j < run.steps.size() && run.steps[j].slots.at(slot).request == use.request &&
             run.steps[j].slots.at(slot).kind == use.kind)
        ++j;
      if (use.kind != SlotUse::idle) {
        static const char* const kinds[] = {"idle", "prefill", "decode", "padding"};
        segments.push_back({{"slot", slot}, {"request", use.request}, {"kind", kinds[use.kind]},
                            {"first_step", i}, {"steps", j - i}, {"start", run.steps[i].start}, {"end", run.steps[j - 1].end}});
      }
      i = j;
    }
  }
  json requests = json::array();
  for (const Request& r : run.requests)
    requests.push_back({{"id", r.id}, {"arrival", r.arrival}, {"tokens", r.tokens.size()}, {"completed", r.completed}});
  return {{"slots", slots}, {"steps", run.steps.size()}, {"segments", segments}, {"requests", requests}};
}

}  // namespace

void workload_tables(const Context& cx, const std::vector<SweepPoint>& sweep) {
  // The cost model: step seconds against tokens fed, from the sweep.
  const StepCostModel cost = cost_model_from(sweep);
  const double full_step = cost(cx.s.slots);
  WorkloadOptions wo;
  wo.requests = cx.s.requests;
  wo.mean_gap = cx.s.gap_steps * full_step;
  const std::vector<Request> requests = make_workload(cx.m.tokenizer, wo);
  std::vector<int> lengths;
  for (const Request& r : requests) lengths.push_back(r.max_new_tokens);
  std::vector<int> sorted = lengths;
  std::sort(sorted.begin(), sorted.end());
  const int64_t total = std::accumulate(lengths.begin(), lengths.end(), int64_t{0});
  const double median_len = percentile(std::vector<double>(sorted.begin(), sorted.end()), 50);
  const std::string shape = fmt::format(
      "{} requests, output lengths median {:g}, longest {}, total {} (seeded log-normal); arrivals: {}", requests.size(),
      median_len, sorted.back(), total,
      cx.s.gap_steps > 0 ? fmt::format("Poisson, mean gap {} ms = {:g} steps of a full batch ({} ms)", cell::ms(wo.mean_gap, 1),
                                       cx.s.gap_steps, cell::ms(full_step, 1))
                         : std::string("all at time 0"));
  cx.figures["workload"] = {{"requests", requests.size()}, {"lengths", lengths}, {"median", median_len},
                            {"longest", sorted.back()}, {"total", total}, {"mean_gap_seconds", wo.mean_gap},
                            {"slots", cx.s.slots}};

  struct Row {
    std::string policy, source;
    PolicyRun run;
  };
  std::vector<Row> rows;
  for (Policy p : {Policy::static_batches, Policy::continuous}) {
    if (!cx.s.skip_real) rows.push_back({policy_name(p), "real", run_real(cx, p, requests, total)});
    rows.push_back({policy_name(p), "simulated", simulate(p, requests, cx.s.slots, cost)});
  }

  Table t(fmt::format("3. The workload with {} slots, static vs continuous batching ({})", cx.s.slots, cx.machine_line),
          {"policy", "run", "total (s)", "throughput (tokens/s)", "mean latency (s)", "p50 latency (s)", "p99 latency (s)",
           "mean TTFT (s)", "p50 TTFT (s)", "p99 TTFT (s)", "steps", "mean batch", "padding rows"});
  for (const Row& r : rows) {
    const ServeSummary& s = r.run.summary;
    t.add_row({r.policy, r.source, cell::secs(s.total_seconds), fmt::format("{:.1f}", s.throughput), cell::secs(s.mean_latency),
               cell::secs(s.p50_latency), cell::secs(s.p99_latency), cell::secs(s.mean_ttft), cell::secs(s.p50_ttft), cell::secs(s.p99_ttft),
               std::to_string(s.steps), fmt::format("{:.2f}", s.mean_batch()), std::to_string(s.padding_rows)});
    cx.figures["workload_runs"].push_back({{"policy", r.policy}, {"run", r.source}, {"summary", summary_json(s)}});
  }
  const auto find = [&](const std::string& policy, const std::string& source) -> const Row* {
    for (const Row& r : rows)
      if (r.policy == policy && r.source == source) return &r;
    return nullptr;
  };
  for (const std::string source : {"real", "simulated"}) {
    const Row* st = find("static", source);
    const Row* co = find("continuous", source);
    if (st == nullptr || co == nullptr) continue;
    const ServeSummary &a = st->run.summary, &b = co->run.summary;
    t.add_row({"continuous ÷ static", source, cell::times(b.total_seconds / a.total_seconds), cell::times(b.throughput / a.throughput),
               cell::times(b.mean_latency / a.mean_latency), cell::times(b.p50_latency / a.p50_latency), cell::times(b.p99_latency / a.p99_latency),
               cell::times(b.mean_ttft / a.mean_ttft), cell::times(b.p50_ttft / a.p50_ttft), cell::times(b.p99_ttft / a.p99_ttft),
               cell::times(static_cast<double>(b.steps) / static_cast<double>(a.steps)), "", ""});
    cx.figures["workload_ratios"][source] = {{"throughput", b.throughput / a.throughput},
                                             {"mean_latency_improvement", a.mean_latency / b.mean_latency}};
  }
  t.add_note(shape + ".");
  t.add_note("latency = handed back − arrival: under static batching a request is handed back when its whole batch ends; TTFT = "
             "end of the step that produced its first token − arrival (as if the server streamed).");
  t.add_note("static: the next 8 requests in arrival order, started when the last of them has arrived, run until the longest "
             "is done; finished members stay in the step as padding rows (computed, thrown away). continuous: a finished "
             "request leaves at once and the next arrived request takes its slot in the next step, its prefill in the same "
             "forward as the others' decode.");
  t.add_note("simulated: the same StaticBatcher and Scheduler code on a virtual clock, each step charged the sweep's time for its "
             "token count (prefill tokens priced like decode rows). The course: 1.6× throughput, over 10× mean latency.");
  cx.emit(t);

  // The report's picture of who held which slot when: the real runs, or the simulated ones without them.
  for (const Row& r : rows)
    if (r.source == (cx.s.skip_real ? "simulated" : "real")) {
      cx.figures["timeline"]["source"] = r.source;
      cx.figures["timeline"][r.policy] = timeline_json(r.run);
    }

  // Both real runs are greedy by default: each request's tokens must not depend on the policy.
  const Row* st = find("static", "real");
  const Row* co = find("continuous", "real");
  if (st != nullptr && co != nullptr) {
    int same = 0;
    for (std::size_t i = 0; i < requests.size(); ++i) same += st->run.requests[i].tokens == co->run.requests[i].tokens;
    fmt::print("Each request's tokens under static and continuous batching: {} of {} identical{}\n\n", same, requests.size(),
               cx.o.sampling.temperature == 0 ? "" : " (sampled, each request with its own seeded sampler)");
    cx.figures["identical_tokens_across_policies"] = same;
    const Request& r0 = co->run.requests.front();
    fmt::print("request 0, \"{}\" → \"{}\"\n\n", cx.m.tokenizer.decode(r0.prompt), cx.m.tokenizer.decode(r0.tokens));
  }

  // Table 4: the requests that shared a batch with the longest one.
  const Row* sv = st != nullptr ? st : find("static", "simulated");
  const Row* cv = co != nullptr ? co : find("continuous", "simulated");
  const auto longest = std::max_element(requests.begin(), requests.end(),
                                        [](const Request& a, const Request& b) { return a.max_new_tokens < b.max_new_tokens; });
  const int64_t batch_of_longest = (longest - requests.begin()) / cx.s.slots;
  Table u(fmt::format("4. The static batch that holds the longest request ({} tokens), {} runs", longest->max_new_tokens, sv->source),
          {"request", "tokens", "arrival (s)", "static: TTFT (s)", "static: latency (s)", "continuous: TTFT (s)",
           "continuous: latency (s)", "static ÷ continuous latency"});
  for (int64_t i = batch_of_longest * cx.s.slots; i < std::min(std::ssize(requests), (batch_of_longest + 1) * cx.s.slots); ++i) {
    const Request &a = sv->run.requests[i], &b = cv->run.requests[i];
    u.add_row({std::to_string(i), std::to_string(a.max_new_tokens), cell::secs(a.arrival), cell::secs(a.ttft()), cell::secs(a.latency()),
               cell::secs(b.ttft()), cell::secs(b.latency()), cell::times(a.latency() / b.latency())});
  }
  u.add_note("Under static batching every member is handed back with the longest; under continuous batching each leaves when it is "
             "done, and its slot serves the queue.");
  cx.emit(u);
}

}  // namespace infer::batching
