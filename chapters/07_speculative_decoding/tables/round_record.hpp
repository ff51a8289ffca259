// The demo's rounds as its --json record keeps them: the course report draws them (each guess
// accepted or rejected, and where the target's own token comes from; docs/course/mechanisms.py).
#pragma once

#include <span>

#include <nlohmann/json.hpp>

#include "speculative_decode.hpp"
#include "tokenizer/tokenizer.hpp"

namespace infer::spec {

// figures.demo.round_log: one object per round, {"guesses": [texts], "guess_ids": [ids], "accepted": k, "next": text,
// "next_id": id, "bonus": bool, "emitted": n}. A token's text is its bytes, invalid UTF-8
// (half a character) shown as U+FFFD.
nlohmann::json rounds_json(std::span<const RoundLog> rounds, const Tokenizer& tokenizer);

}  // namespace infer::spec
