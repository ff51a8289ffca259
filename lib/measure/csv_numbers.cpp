#include "measure/csv_numbers.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include <fmt/format.h>

namespace infer {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// A printed cell read back: its number as written (sign, digits, no thousands commas) and the
// unit after it ("" for a bare number). nullopt when the cell is not one number and a unit.
struct Quantity {
  std::string number;
  std::string unit;
};

std::optional<Quantity> parse_quantity(std::string s) {
  const std::size_t first = s.find_first_not_of(' '), last = s.find_last_not_of(' ');
  s = first == std::string::npos ? std::string() : s.substr(first, last - first + 1);
  const std::string minus = "\u2212";  // the typographic minus the tables print

  std::string number;
  std::size_t i = 0;
  if (s.compare(0, minus.size(), minus) == 0) {
    number.push_back('-');
    i = minus.size();
  } else if (i < s.size() && (s[i] == '-' || s[i] == '+')) {
    number.push_back(s[i++]);
  }
  // Integer digits, with thousands commas only in their proper places: "11,676", not "1,2".
  std::size_t group = 0, digits = 0;
  bool grouped = false;
  while (i < s.size()) {
    if (is_digit(s[i])) {
      number += s[i++];
      ++group;
      ++digits;
    } else if (s[i] == ',' && group >= 1 && group <= 3 && (!grouped || group == 3) && i + 3 < s.size() &&
               is_digit(s[i + 1]) && is_digit(s[i + 2]) && is_digit(s[i + 3]) &&
               (i + 4 == s.size() || !is_digit(s[i + 4]))) {
      grouped = true;
      group = 0;
      ++i;
    } else {
      break;
    }
  }
  if (grouped && group != 3) return std::nullopt;
  if (i < s.size() && s[i] == '.') {
    number += s[i++];
    while (i < s.size() && is_digit(s[i])) {
      number += s[i++];
      ++digits;
    }
  }
  if (digits == 0) return std::nullopt;
  if (i + 1 < s.size() && (s[i] == 'e' || s[i] == 'E') &&
      (is_digit(s[i + 1]) || ((s[i + 1] == '-' || s[i + 1] == '+') && i + 2 < s.size() && is_digit(s[i + 2])))) {
    number += s[i++];
    if (s[i] == '-' || s[i] == '+') number += s[i++];
    while (i < s.size() && is_digit(s[i])) number += s[i++];
  }
  if (i < s.size() && s[i] == ' ') ++i;  // "14.5 GB" and "1.29×" alike
  std::string unit = s.substr(i);
  // A unit is one short word: no spaces, commas or digits ("3 × 64" and "7B, GQA" are text).
  if (unit.size() > 10 || unit.find_first_of(" ,0123456789()") != std::string::npos) return std::nullopt;
  if (!unit.empty() && (unit[0] == '.' || unit[0] == '-' || unit[0] == '+')) return std::nullopt;
  return Quantity{number, unit};
}

// Units that differ only in scale, and the unit of the column once they are brought together.
struct Family {
  const char* unit;
  std::map<std::string, double> scale;
};
const std::vector<Family>& families() {
  static const std::vector<Family> f = {
      {"bytes", {{"B", 1}, {"KB", 1e3}, {"kB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
                 {"KiB", 1024.0}, {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}}},
      {"s", {{"ns", 1e-9}, {"µs", 1e-6}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1}, {"min", 60}, {"h", 3600}}},
      {"B/s", {{"B/s", 1}, {"KB/s", 1e3}, {"MB/s", 1e6}, {"GB/s", 1e9}, {"TB/s", 1e12}}},
      {"FLOP/s", {{"FLOP/s", 1}, {"MFLOP/s", 1e6}, {"GFLOP/s", 1e9}, {"TFLOP/s", 1e12}}},
  };
  return f;
}

// A scaled value as a plotting tool reads it: 10 significant digits (what the printed cell
// held, without the product's round-off), whole numbers without an exponent.
std::string plain(double value) {
  const double rounded = std::stod(fmt::format("{:.10g}", value));
  if (rounded == std::floor(rounded) && std::fabs(rounded) < 1e15) return fmt::format("{:.0f}", rounded);
  return fmt::format("{:.10g}", rounded);
}

}  // namespace

CsvColumn plain_number_column(const std::string& header, const std::vector<std::string>& cells) {
  const CsvColumn unchanged{header, cells};
  std::vector<std::optional<Quantity>> parsed(cells.size());
  std::set<std::string> units;
  for (std::size_t r = 0; r < cells.size(); ++r) {
    if (std::none_of(cells[r].begin(), cells[r].end(), is_digit)) continue;  // text passes through
    parsed[r] = parse_quantity(cells[r]);
    if (!parsed[r]) return unchanged;
    units.insert(parsed[r]->unit);
  }
  if (units.empty()) return unchanged;
  // A ratio row under a column of quantities ("ch01 ÷ ch02: 0.2×" below rows of MB) is a note,
  // not a value of the column: when "×" cells are the fewer, they pass through as text.
  if (units.size() > 1 && units.count("×") > 0) {
    const auto ratios = std::count_if(parsed.begin(), parsed.end(), [](const auto& q) { return q && q->unit == "×"; });
    const auto others = std::count_if(parsed.begin(), parsed.end(), [](const auto& q) { return q && q->unit != "×"; });
    if (ratios < others) {
      for (auto& q : parsed)
        if (q && q->unit == "×") q.reset();
      units.erase("×");
    }
  }

  // A header that already names its unit, "scores (bytes)" or "step (ms)", keeps it: the cells
  // are brought to that unit's family, or only stripped when they carry the same unit.
  std::string base = header, named;
  if (const auto open = header.rfind(" ("); open != std::string::npos && header.back() == ')') {
    base = header.substr(0, open);
    named = header.substr(open + 2, header.size() - open - 3);
  }
  const auto family_of = [](const std::string& unit) -> const Family* {
    for (const Family& f : families())
      if (f.unit == unit || f.scale.count(unit) > 0) return &f;
    return nullptr;
  };
  const auto all_in = [&](const Family& f) {
    return std::all_of(units.begin(), units.end(), [&](const std::string& u) { return f.scale.count(u) > 0; });
  };

  CsvColumn out{header, cells};
  if (units.size() == 1 && (*units.begin() == named || family_of(named) == nullptr)) {  // one unit, named once
    const std::string& unit = *units.begin();
    if (unit != named && !unit.empty()) out.header += " (" + unit + ")";
    for (std::size_t r = 0; r < cells.size(); ++r)
      if (parsed[r]) out.cells[r] = parsed[r]->number;
    return out;
  }
  const Family* family = !named.empty() ? family_of(named) : nullptr;
  if (family == nullptr && units.size() > 1)
    for (const Family& f : families())
      if (all_in(f)) family = &f;
  if (family != nullptr && all_in(*family)) {  // several scales of one unit: brought to the base unit
    out.header = (family_of(named) == family ? base : header) + fmt::format(" ({})", family->unit);
    for (std::size_t r = 0; r < cells.size(); ++r)
      if (parsed[r]) out.cells[r] = plain(std::stod(parsed[r]->number) * family->scale.at(parsed[r]->unit));
    return out;
  }
  return unchanged;
}

}  // namespace infer
