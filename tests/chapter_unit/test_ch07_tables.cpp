// Chapter 07's tables, built from made-up measurements: every cell lands under its own header
// (the per-draft table once printed plain decoding's speed under "speed-up"), and the CSV that
// the course report plots holds numbers in the numeric columns. No model needed.
#include <algorithm>
#include <cstdlib>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "catch_compat.hpp"

#include "agreement_alpha.hpp"
#include "06_quantization/tables/question_battery.hpp"  // wilson_interval
#include "studies.hpp"

using namespace infer;
using namespace infer::spec;

namespace {

// A table's CSV as column name → cells, row by row (the tables here quote nothing).
struct Csv {
  std::vector<std::string> headers;
  std::vector<std::map<std::string, std::string>> rows;
};
Csv parse(const std::string& text) {
  REQUIRE(text.find('"') == std::string::npos);
  auto split = [](const std::string& line) {
    std::vector<std::string> cells;
    std::stringstream in(line);
    std::string cell;
    while (std::getline(in, cell, ',')) cells.push_back(cell);
    if (!line.empty() && line.back() == ',') cells.emplace_back();
    return cells;
  };
  std::stringstream in(text);
  std::string line;
  Csv csv;
  std::getline(in, line);
  csv.headers = split(line);
  while (std::getline(in, line)) {
    const std::vector<std::string> cells = split(line);
    REQUIRE(cells.size() == csv.headers.size());
    std::map<std::string, std::string> row;
    for (std::size_t i = 0; i < cells.size(); ++i) row[csv.headers[i]] = cells[i];
    csv.rows.push_back(row);
  }
  return csv;
}

bool is_number(const std::string& s) {
  if (s.empty()) return false;
  char* end = nullptr;
  std::strtod(s.c_str(), &end);
  return end == s.c_str() + s.size();
}

Timed run(double seconds, int tokens, int64_t drafted, int64_t accepted) {
  Timed t;
  t.seconds = seconds;
  t.tokens.assign(tokens, 7);
  t.stats.rounds = 10;
  t.stats.drafted = drafted;
  t.stats.accepted = accepted;
  t.stats.round_tokens = tokens - 1;
  t.stats.checked_at = {10, 8};
  t.stats.accepted_at = {8, 6};
  return t;
}

}  // namespace

TEST_CASE("ch07's per-draft table: plain decoding's speed under tokens/s, its 1.00× under speed-up", "[ch07_tables]") {
  const Timed plain = run(2.0, 64, 0, 0);
  const std::vector<DraftResult> drafts = {{"Q8_0", 143e6, 0.375, 1.9, run(1.0, 64, 18, 14)},
                                           {"prompt lookup", 0, 0, 1.1, run(1.6, 64, 18, 14)}};
  const Table t = draft_table("Each draft at γ = 2", 2, plain, drafts, /*greedy=*/true);
  const Csv csv = parse(t.csv());
  // A column whose every cell carries × becomes numbers with "(×)" in its header; a plain speed
  // among them would leave the column as printed text.
  for (const char* h : {"speed-up (×)", "predicted (×)"})
    CHECK(std::find(csv.headers.begin(), csv.headers.end(), h) != csv.headers.end());
  REQUIRE(csv.rows.size() == 3);
  const auto& p = csv.rows[0];
  CHECK(p.at("draft") == "none: plain decoding (chapter 03)");
  CHECK(p.at("tokens/s") == "32.0");
  CHECK(p.at("speed-up (×)") == "1.00");
  for (const auto& [header, cell] : p)
    if (header != "draft" && header != "tokens/s" && header != "speed-up (×)") CHECK(cell.empty());
  const auto& q = csv.rows[1];
  CHECK(q.at("draft") == "Q8_0");
  CHECK(q.at("MB / guess") == "143.0");
  CHECK(q.at("c") == "0.375");
  CHECK(q.at("α at 1") == "0.80");
  CHECK(q.at("α at 2") == "0.75");
  CHECK(q.at("tokens/s") == "64.0");
  CHECK(q.at("speed-up (×)") == "2.00");
  CHECK(q.at("predicted (×)") == "1.90");
  CHECK(q.at("measured ÷ predicted") == "1.05");
  CHECK(q.at("tokens = plain") == "✓");
  CHECK(q.at("verdict") == "faster");
  // Every numeric column holds a number in every draft row.
  for (std::size_t r = 1; r < csv.rows.size(); ++r)
    for (const auto& [header, cell] : csv.rows[r])
      if (header != "draft" && header != "tokens = plain" && header != "verdict") CHECK(is_number(cell));
}

TEST_CASE("ch07's table rows are filled by column name", "[ch07_tables]") {
  NamedRow row({"a", "b", "c"});
  row.set("c", "3").set("a", "1");
  CHECK(row.cells() == std::vector<std::string>{"1", "", "3"});
  CHECK_THROWS_AS(row.set("d", "4"), std::logic_error);
}

TEST_CASE("ch07's α beside chapter 06's agreement: counts, intervals and their overlap", "[ch07_tables]") {
  const std::vector<AgreementAlpha> rows = {{"Q8_0", {144, 142}, {120, 118}, true},
                                            {"first 10 layers", {144, 20}, {100, 60}, false}};
  const Table t = agreement_alpha_table(rows, 4, 144, 3);
  const Csv csv = parse(t.csv());
  REQUIRE(csv.rows.size() == 2);
  const auto& a = csv.rows[0];
  CHECK(a.at("draft") == "Q8_0");
  CHECK(a.at("agreement") == "0.986");
  CHECK(a.at("agreeing / positions") == "142/144");
  const quant::Interval ci = quant::wilson_interval(142, 144);
  CHECK(a.at("agreement 95% CI") == fmt::format("{:.2f}–{:.2f}", ci.lo, ci.hi));
  CHECK(a.at("α") == "0.983");
  CHECK(a.at("kept / checked") == "118/120");
  CHECK(a.at("intervals overlap") == "yes");
  CHECK(a.at("tokens = fp32") == "✓");
  const auto& b = csv.rows[1];
  CHECK(b.at("intervals overlap") == "NO");  // 0.14 of 144 against 0.60 of 100
  CHECK(b.at("tokens = fp32") == "✗ DIFFERENT");
}
