// Reads a JSON rendering of a snapshot into the same ValueGraph the unpickler builds.
#pragma once

#include <cstdint>
#include <span>

#include "memsnap/pickle/value.hpp"
#include "memsnap/util/memory_budget.hpp"

namespace memsnap::pickle {

/// Parses JSON text (objects become dicts, arrays lists). Iterative, so nesting
/// depth cannot exhaust the C++ stack. Throws InputError("offset N", ...) on bad JSON.
ValueGraph read_json(std::span<const uint8_t> input, util::MemoryBudget* budget = nullptr);

}  // namespace memsnap::pickle
