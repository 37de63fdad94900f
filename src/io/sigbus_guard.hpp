// The SIGBUS guard of mapped input files (sigbus_guard.cpp): a mapped file that shrinks
// while it is read reads as zeros from there on, and the offset is recorded for
// ByteSource::check_intact(), which turns it into an input error.
#pragma once

#include <cstddef>
#include <cstdint>

namespace memsnap::io {

/// Registers [begin, begin + len) as a guarded mapping (the handler is installed on first
/// use); returns its slot, or -1 when every slot is taken (the mapping is then unguarded).
int guard_mapping(const void* begin, size_t len);
/// Ends the guard of a slot from guard_mapping (-1: nothing).
void unguard(int slot);
/// The lowest offset of the slot's mapping that faulted, or UINT64_MAX.
uint64_t guard_fault(int slot);

}  // namespace memsnap::io
