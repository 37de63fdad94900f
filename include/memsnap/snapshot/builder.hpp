// Walks a decoded value graph along the snapshot schema and builds the normalised model.
#pragma once

#include <cstdint>

#include "memsnap/pickle/value.hpp"
#include "memsnap/snapshot/model.hpp"
#include "memsnap/util/memory_budget.hpp"

namespace memsnap::snapshot {

struct BuildOptions {
  /// Size of the decoded input; bounds the work the builder may do, so that a
  /// file sharing one large object many times cannot make it run for hours.
  uint64_t input_bytes = 0;
  /// The run's memory bound: the model is counted as util::Account::Model while it grows.
  util::MemoryBudget* budget = nullptr;
};

/// Builds the model. Throws InputError with a snapshot path
/// ("segments[3].blocks[2].size", "expected int, got str") on a schema violation.
/// Unknown keys are ignored; non-fatal oddities become Snapshot::warnings.
Snapshot build_snapshot(const pickle::ValueGraph& graph, const BuildOptions& options = {});

}  // namespace memsnap::snapshot
