#include "round_record.hpp"

#include "tokenizer/utf8.hpp"

namespace infer::spec {

nlohmann::json rounds_json(std::span<const RoundLog> rounds, const Tokenizer& tokenizer) {
  const auto text = [&](int32_t id) { return utf8::replace_invalid(tokenizer.token_bytes(id)); };
  nlohmann::json out = nlohmann::json::array();
  for (const RoundLog& r : rounds) {
    nlohmann::json guesses = nlohmann::json::array();
    for (int32_t id : r.guesses) guesses.push_back(text(id));
    out.push_back({{"guesses", guesses}, {"guess_ids", r.guesses}, {"accepted", r.accepted}, {"next", text(r.next)},
                   {"next_id", r.next}, {"bonus", r.bonus}, {"emitted", r.emitted}});
  }
  return out;
}

}  // namespace infer::spec
