// Table 6, external fragmentation (part 1): table 2's budget as one arena, chapter 04's workload
// replayed in it three ways. Contiguous, each admitted request takes one range placed first fit
// (first_fit_arena.hpp): every request the same size (table 2's fixed slots), or its own prompt +
// the length cap. Paged, in blocks from the lesson's BlockPool. At every step it records the free
// memory and the largest free range, and at every admission refused, whether the free memory
// together would have held the request: free but unusable, external fragmentation.
// Why: the chapter's opening claim, that holes between contiguous caches are wasted where blocks
// waste nothing but the tail of each last block, measured on the same requests as tables 1 and 2.
#pragma once

#include <vector>

#include "04_batching/request.hpp"
#include "budget_table.hpp"
#include "paging_tables.hpp"

namespace infer::paging {

void fragmentation_table(const Context& cx, const std::vector<Request>& requests, const Budget& budget);

}  // namespace infer::paging
