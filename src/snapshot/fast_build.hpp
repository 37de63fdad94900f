// The schema-directed fast path: pickle bytes straight to a Snapshot, no value graph (internal).
#pragma once

#include <cstdint>
#include <optional>
#include <span>

#include "memsnap/snapshot/model.hpp"
#include "memsnap/util/memory_budget.hpp"
#include "memsnap/util/progress.hpp"

namespace memsnap::snapshot::detail {

struct FastResult {
  Snapshot snapshot;
  int protocol = 0;
};

/// Builds the model from a pickle in one pass over its opcodes, or returns nullopt
/// at the first form it does not handle (text opcodes, legacy history, a duplicate
/// key, a shared event dict, anything malformed, ...). It never reports an error
/// itself: the caller then runs the generic path (unpickle + build_snapshot), which
/// gives the same model or the exact error. When it returns a model, that model is
/// identical to the generic path's, ids and order of every table included.
/// The memory bound is the one exception: passing it throws InputError, as the
/// generic path would (its value graph is larger, so it would pass it too).
std::optional<FastResult> fast_build(std::span<const uint8_t> input, util::MemoryBudget* budget = nullptr,
                                     const ProgressFn* progress = nullptr);

}  // namespace memsnap::snapshot::detail
