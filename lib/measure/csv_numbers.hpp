// Plain numbers for --csv. A printed table is for people: "14.5 GB", "12.3 ms", "1.29×",
// "11,676". A CSV file is for a plotting tool, which wants 14500000000 in a column headed
// "(bytes)". Rather than have every table build both forms, the CSV writer turns each column
// back into numbers with its unit in the header, when every cell of the column agrees on a unit:
//
//   "269 MB", "14.5 GB"   → 269000000, 14500000000   header + " (bytes)"
//   "850 µs", "1.2 s"     → 0.00085, 1.2              header + " (s)"
//   "1.29×", "0.44×"      → 1.29, 0.44                header + " (×)"
//   "11,676", "−3"        → 11676, -3                 header unchanged
//
// Cells without a digit ("weights do not fit", "✓", "") pass through as text. A column whose
// cells disagree ("3 × 64", "7B, GQA", or "12 ms" beside "4 GB") is left exactly as printed.
#pragma once

#include <string>
#include <vector>

namespace infer {

struct CsvColumn {
  std::string header;
  std::vector<std::string> cells;
};

// The column as the CSV file should hold it (see above).
CsvColumn plain_number_column(const std::string& header, const std::vector<std::string>& cells);

}  // namespace infer
