// Table 5, the block size: table 1's waste for blocks of 8, 16 and 32 beside the time of one
// decode step of --slots sequences of --cached positions, contiguous and paged at each size.
// Why: smaller blocks waste less memory, but attention walks more, shorter runs of rows and the
// scheduler tracks more blocks; the table measures what that costs on this machine.
#pragma once

#include "memory_table.hpp"
#include "paging_tables.hpp"

namespace infer::paging {

void block_size_table(const Context& cx, const WorkloadRuns& runs);

}  // namespace infer::paging
