// The embedded unpickler: protocols 0-5, plain data only; never imports or calls anything.
#pragma once

#include <cstdint>
#include <span>

#include "memsnap/pickle/value.hpp"
#include "memsnap/util/memory_budget.hpp"
#include "memsnap/util/progress.hpp"

namespace memsnap::pickle {

struct Limits {
  /// Deepest MARK nesting accepted (genuine snapshots nest about 8 deep).
  uint32_t max_marks = 4096;
  /// Largest value stack (objects built but not yet placed in a container).
  uint64_t max_stack = uint64_t{1} << 28;
  /// Not a limit, but what every parse call carries: called every few MiB with
  /// (input bytes consumed, input size). A parser calls it through ProgressTicker
  /// from its main loop (one compare per opcode).
  ProgressFn progress;
  /// The run's memory bound: the graph, memo and stack count as util::Account::Parse.
  util::MemoryBudget* budget = nullptr;
};

struct PickleInfo {
  int protocol = 0;          // from PROTO, 0 when absent
  uint64_t stop_offset = 0;  // byte offset of STOP
  uint64_t opcodes = 0;      // opcodes executed
  uint64_t memo_entries = 0;
};

/// Decodes `input` into a ValueGraph whose string views point into `input`
/// (which must outlive the graph). Throws InputError("offset N", ...) on
/// malformed input and on every opcode that would import or call code.
ValueGraph unpickle(std::span<const uint8_t> input, PickleInfo* info = nullptr, const Limits& limits = {});

/// Name of an opcode byte ("BINUNICODE"), or nullptr for bytes that are not opcodes.
const char* opcode_name(uint8_t op);

}  // namespace memsnap::pickle
