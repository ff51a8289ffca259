// Table 4, part 2 of the chapter (sharing): n samples of one prompt, forked from one prefill
// (the samples' block tables list the prompt's blocks; the first write into the shared, partly
// filled last block copies it: copy-on-write) against n independent requests. Why: parallel
// sampling and beam search hold one copy of the prompt, not n. It then prints the samples.
#pragma once

#include "paging_tables.hpp"

namespace infer::paging {

void samples_table(const Context& cx);

}  // namespace infer::paging
