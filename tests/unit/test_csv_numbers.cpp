// --csv writes plain numbers with the unit in the header, so a student can plot any table.
#include "catch_compat.hpp"

#include "measure/csv_numbers.hpp"
#include "measure/table.hpp"

using infer::plain_number_column;

TEST_CASE("one unit per column: stripped from the cells, named in the header", "[table][csv]") {
  const auto c = plain_number_column("speed-up", {"1.29×", "0.44×", ""});
  CHECK(c.header == "speed-up (×)");
  CHECK(c.cells == std::vector<std::string>{"1.29", "0.44", ""});
  const auto p = plain_number_column("agreement", {"48.4%", "100%"});
  CHECK(p.header == "agreement (%)");
  CHECK(p.cells == std::vector<std::string>{"48.4", "100"});
}

TEST_CASE("scales of one unit are brought to the base unit", "[table][csv]") {
  const auto b = plain_number_column("weights", {"269 MB", "14.5 GB", "512 B", "4 KiB"});
  CHECK(b.header == "weights (bytes)");
  CHECK(b.cells == std::vector<std::string>{"269000000", "14500000000", "512", "4096"});
  const auto t = plain_number_column("step", {"850 µs", "1.2 s", "12.5 ms"});
  CHECK(t.header == "step (s)");
  CHECK(t.cells == std::vector<std::string>{"0.00085", "1.2", "0.0125"});
  const auto r = plain_number_column("rate", {"88.4 GFLOP/s", "900 MFLOP/s"});
  CHECK(r.header == "rate (FLOP/s)");
  CHECK(r.cells == std::vector<std::string>{"88400000000", "900000000"});
}

TEST_CASE("a header that names its unit keeps it, once", "[table][csv]") {
  const auto b = plain_number_column("scores (bytes)", {"1.2 KB", "512 B"});
  CHECK(b.header == "scores (bytes)");
  CHECK(b.cells == std::vector<std::string>{"1200", "512"});
  const auto m = plain_number_column("read (MB)", {"2.5 MB", "1.25 GB"});
  CHECK(m.header == "read (bytes)");
  CHECK(m.cells == std::vector<std::string>{"2500000", "1250000000"});
  const auto t = plain_number_column("step (ms)", {"12 ms", "3.5 ms"});
  CHECK(t.header == "step (ms)");
  CHECK(t.cells == std::vector<std::string>{"12", "3.5"});
  // A header naming something else in brackets is not a unit: the cells' unit is added.
  const auto x = plain_number_column("speed-up (vs fp32)", {"1.5×", "2×"});
  CHECK(x.header == "speed-up (vs fp32) (×)");
}

TEST_CASE("a ratio row under a column of quantities stays as printed", "[table][csv]") {
  const auto c = plain_number_column("peak", {"8.97 MB", "1.21 MB", "7.4×"});
  CHECK(c.header == "peak (MB)");
  CHECK(c.cells == std::vector<std::string>{"8.97", "1.21", "7.4×"});
  const auto t = plain_number_column("total (s)", {"38.43", "14.84", "0.39×"});
  CHECK(t.header == "total (s)");
  CHECK(t.cells == std::vector<std::string>{"38.43", "14.84", "0.39×"});
  // Mostly ratios: the column is a column of ratios, and the odd cell decides nothing.
  const std::vector<std::string> mixed = {"1.5×", "2×", "3 MB"};
  CHECK(plain_number_column("x", mixed).cells == mixed);
}

TEST_CASE("thousands separators, minus signs and exponents", "[table][csv]") {
  const auto c = plain_number_column("tokens", {"11,676", "1,048,576", "\u22123", "+2.1", "1.5e-06", "7"});
  CHECK(c.header == "tokens");
  CHECK(c.cells == std::vector<std::string>{"11676", "1048576", "-3", "+2.1", "1.5e-06", "7"});
}

TEST_CASE("text passes through; a column that is not one quantity is left as printed", "[table][csv]") {
  // Cells without a digit are text beside the numbers.
  const auto users = plain_number_column("users in 24 GB", {"251", "weights do not fit", "6,778"});
  CHECK(users.cells == std::vector<std::string>{"251", "weights do not fit", "6778"});
  CHECK(users.header == "users in 24 GB");
  // Cells with digits that are not one number and a unit keep the whole column as printed.
  const std::vector<std::string> shapes = {"3 × 64", "8 × 128"};
  CHECK(plain_number_column("kv heads × D", shapes).cells == shapes);
  const std::vector<std::string> names = {"7B, GQA", "13"};
  CHECK(plain_number_column("model", names).cells == names);
  const std::vector<std::string> schemes = {"Q4_1", "int4-g128"};
  CHECK(plain_number_column("scheme", schemes).cells == schemes);
  const std::vector<std::string> bad_commas = {"1,2", "3"};
  CHECK(plain_number_column("x", bad_commas).cells == bad_commas);
  // Units of different kinds do not mix.
  const std::vector<std::string> mixed = {"12 ms", "4 GB"};
  const auto m = plain_number_column("cost", mixed);
  CHECK(m.header == "cost");
  CHECK(m.cells == mixed);
}

TEST_CASE("Table::csv writes the plain columns; render() keeps the printed cells", "[table][csv]") {
  infer::Table t("sizes", {"model", "weights", "speed-up"});
  t.add_row({"a, quoted", "269 MB", "1.00×"});
  t.add_row({"b", "14.5 GB", "2.50×"});
  CHECK(t.csv() == "model,weights (bytes),speed-up (×)\n\"a, quoted\",269000000,1.00\nb,14500000000,2.50\n");
  CHECK(t.render().find("14.5 GB") != std::string::npos);
}

TEST_CASE("format_seconds never prints an exponent at a unit's edge", "[table]") {
  CHECK(infer::format_seconds(0.9996) == "1 s");
  CHECK(infer::format_seconds(0.9994) == "999 ms");
  CHECK(infer::format_seconds(0.0009996) == "1 ms");
  CHECK(infer::format_seconds(1.5e-6) == "1.5 µs");
  CHECK(infer::format_seconds(12.34) == "12.3 s");
}
