// Reads a JSON rendering of a snapshot into the same ValueGraph the unpickler builds.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "memsnap/pickle/value.hpp"
#include "memsnap/util/memory_budget.hpp"

namespace memsnap::pickle {

/// Arrays and objects nested deeper than this are refused: a snapshot nests fewer than 10
/// levels, and nothing later has to walk a deeper document.
inline constexpr size_t kMaxJsonDepth = 128;

/// Parses JSON text (objects become dicts, arrays lists). Iterative, so nesting
/// depth cannot exhaust the C++ stack. Throws InputError("offset N", ...) on bad JSON,
/// and at the bracket that opens level kMaxJsonDepth + 1.
ValueGraph read_json(std::span<const uint8_t> input, util::MemoryBudget* budget = nullptr);

}  // namespace memsnap::pickle
