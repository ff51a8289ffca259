#include "measure/table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include <fmt/format.h>

#include "measure/atomic_file.hpp"
#include "measure/csv_numbers.hpp"

namespace infer {
namespace {

bool looks_numeric(const std::string& s) {
  if (s.empty()) return false;
  const char c = s[0];
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.';
}

std::string csv_cell(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

// Display width in terminal columns (UTF-8 continuation bytes take no column).
std::size_t width(const std::string& s) {
  return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) {
    return (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  }));
}

}  // namespace

Table::Table(std::string title, std::vector<std::string> headers)
    : title_(std::move(title)), headers_(std::move(headers)) {}

void Table::add_row(std::vector<std::string> cells) {
  if (cells.size() != headers_.size())
    throw std::logic_error(fmt::format("table '{}': row of {} cells for {} columns", title_,
                                       cells.size(), headers_.size()));
  rows_.push_back(std::move(cells));
}

void Table::add_note(std::string note) { notes_.push_back(std::move(note)); }

std::string Table::render() const {
  std::vector<std::size_t> w(headers_.size());
  for (std::size_t i = 0; i < headers_.size(); ++i) w[i] = width(headers_[i]);
  for (const auto& row : rows_)
    for (std::size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], width(row[i]));
  auto pad = [](const std::string& s, std::size_t n, bool right) {
    const std::string fill(n - width(s), ' ');
    return right ? fill + s : s + fill;
  };
  std::string out = title_.empty() ? "" : title_ + "\n";
  std::string line;
  for (std::size_t i = 0; i < headers_.size(); ++i) {
    if (i > 0) line += "  ";
    line += pad(headers_[i], w[i], i > 0);
  }
  out += line + "\n";
  std::size_t total = 0;
  for (std::size_t x : w) total += x;
  out += std::string(total + 2 * (w.size() - 1), '-') + "\n";
  for (const auto& row : rows_) {
    line.clear();
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i > 0) line += "  ";
      line += pad(row[i], w[i], i > 0 && looks_numeric(row[i]));
    }
    out += line + "\n";
  }
  for (const auto& note : notes_) out += note + "\n";
  return out;
}

std::string Table::csv() const {
  // Column by column: plain numbers with the unit in the header (measure/csv_numbers.hpp).
  std::vector<CsvColumn> columns;
  for (std::size_t i = 0; i < headers_.size(); ++i) {
    std::vector<std::string> cells;
    for (const auto& row : rows_) cells.push_back(row[i]);
    columns.push_back(plain_number_column(headers_[i], cells));
  }
  std::string out;
  for (std::size_t i = 0; i < columns.size(); ++i) out += (i > 0 ? "," : "") + csv_cell(columns[i].header);
  out += "\n";
  for (std::size_t r = 0; r < rows_.size(); ++r) {
    for (std::size_t i = 0; i < columns.size(); ++i) out += (i > 0 ? "," : "") + csv_cell(columns[i].cells[r]);
    out += "\n";
  }
  return out;
}

void Table::print() const { std::fputs((render() + "\n").c_str(), stdout); }

void Table::emit(const std::string& csv_path) const {
  print();
  append_csv(csv_path);
}

void Table::append_csv(const std::string& path) const {
  if (path.empty()) return;
  // Atomically, like the run record: a run that stops half-way through a table (or a plotting
  // script that reads the file meanwhile) finds the tables before it whole, and no half table.
  append_file_atomically(path, "# " + title_ + "\n" + csv() + "\n");
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (std::fabs(bytes) >= 1000.0 && u < 4) {
    bytes /= 1000.0;
    ++u;
  }
  return u == 0 ? fmt::format("{:.0f} B", bytes) : fmt::format("{:.3g} {}", bytes, units[u]);
}

std::string format_seconds(double s) {
  // Thresholds just below 1 so that 0.9996 s prints as "1 s", not "1e+03 ms" ({:.3g} rounds to 3 digits).
  if (s >= 0.9995) return fmt::format("{:.3g} s", s);
  if (s >= 0.9995e-3) return fmt::format("{:.3g} ms", s * 1e3);
  return fmt::format("{:.3g} µs", s * 1e6);
}

std::string format_count(double count) {
  std::string digits = fmt::format("{:.0f}", count);
  std::string out;
  const std::size_t start = digits[0] == '-' ? 1 : 0;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > start && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

namespace cell {
std::string ms(double seconds, int decimals) { return fmt::format("{:.{}f}", seconds * 1e3, decimals); }
std::string secs(double seconds, int decimals) { return fmt::format("{:.{}f}", seconds, decimals); }
std::string times(double ratio, int decimals) { return fmt::format("{:.{}f}×", ratio, decimals); }
std::string percent(double fraction, int decimals) { return fmt::format("{:.{}f}%", 100 * fraction, decimals); }
}  // namespace cell

}  // namespace infer
