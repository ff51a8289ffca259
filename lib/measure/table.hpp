// Printing tables: aligned columns with units in the headers, the same rows
// optionally written as CSV (--csv) for plotting elsewhere.
#pragma once

#include <string>
#include <vector>

namespace infer {

class Table {
 public:
  Table(std::string title, std::vector<std::string> headers);
  void add_row(std::vector<std::string> cells);
  void add_note(std::string note);  // printed under the table

  std::string render() const;       // aligned text: numbers right-aligned, text left-aligned
  std::string csv() const;          // headers + rows, RFC 4180 quoting; numbers plain, units in the header
  void print() const;               // render() to stdout
  // Appends this table to a CSV file (a "# title" line, then csv()), atomically: the file is
  // rewritten through a temporary file and a rename, so it never holds half a table. No-op for
  // an empty path.
  void append_csv(const std::string& path) const;
  // print(), then append_csv(csv_path): how a run shows each of its tables.
  void emit(const std::string& csv_path) const;

  const std::string& title() const { return title_; }
  const std::vector<std::vector<std::string>>& rows() const { return rows_; }

 private:
  std::string title_;
  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<std::string> notes_;
};

// Human-readable quantities: "1.25 GB", "512 KiB"-style sizes in decimal units, durations
// that pick ms/µs/s, and counts with thousands separators.
std::string format_bytes(double bytes);
std::string format_seconds(double seconds);
std::string format_count(double count);

// Table cells: the number in the unit its column header names ("step (ms)"), or a ratio or a
// share with its sign.
namespace cell {
std::string ms(double seconds, int decimals = 2);        // 0.01234 → "12.34"
std::string secs(double seconds, int decimals = 2);      // 1.5 → "1.50"
std::string times(double ratio, int decimals = 2);       // 1.25 → "1.25×"
std::string percent(double fraction, int decimals = 1);  // 0.125 → "12.5%"
}  // namespace cell

}  // namespace infer
