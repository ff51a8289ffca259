// Table 3, part 2 of the chapter (sharing): a long system prompt shared by many requests, served
// with the prefix cache off (every prompt prefilled whole) and on (the system prompt's full
// blocks found by their chained hashes and adopted, only the rest computed). Why: once memory
// is paged, a common start is computed once and stored once — prefill time and memory both fall.
#pragma once

#include "paging_tables.hpp"

namespace infer::paging {

void prefix_table(const Context& cx);

}  // namespace infer::paging
