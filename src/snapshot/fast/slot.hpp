// The fast path's values: the 16-byte stack slot, the open container record, and the
// signals by which the fast path gives way (Bail) or its second half stops (TailStop).
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "memsnap/snapshot/model.hpp"
#include "roles.hpp"

namespace memsnap::snapshot::detail::fast {

// ---- slots --------------------------------------------------------------------------------
enum Tag : uint8_t {
  kNone,
  kBool,
  kInt,
  kUInt,
  kBig,
  kFloat,
  kStr,
  kTuple,
  kOther,     // atoms
  kOpen,      // a container being built: a = open record
  kFrame,     // a = provisional FrameId
  kStack,     // a = provisional StackId
  kEvent,     // a trace event decoded by the fixed-layout decoder: a = staging index
  kBlocks,    // a finished blocks list: a..b = range of pending_blocks_
  kRoundup,   // a finished roundup dict: a..b = range of roundup_
  kDone,      // a finished container of no interest (an ignored value)
  kDeferred,  // the second half of a split parse: a memo GET it cannot know yet; a = its
              // placeholder stack id (kDeferredStack | index into deferred_)
};
constexpr uint32_t kDeferredStack = 0x80000000u;
// The second half of a split parse: the frame that memo entry i will be, as a provisional
// FrameId (kDeferredFrame | i). Protocol 4 never replaces a memo entry, so i names one frame.
constexpr uint32_t kDeferredFrame = 0x80000000u;

struct Slot {
  Tag tag = kNone;
  Sym sym = Y_none;
  uint16_t spare = 0;
  uint32_t a = 0;
  uint64_t b = 0;
};
static_assert(sizeof(Slot) == 16);

constexpr uint32_t kNone32 = 0xFFFFFFFFu;

struct Open {
  Role role;
  CKind kind;
  Sym key = Y_none;  // dict parent: the key this container is the value of
  uint32_t parent;   // open record of the parent, kNone32 for the root
  uint32_t pos = 0;  // list parent: the element index this container will take
  uint32_t memo = kNone32;
  uint32_t count = 0;   // list: elements appended so far
  uint32_t fields = 0;  // dict: first slot in fields_
  uint32_t seen = 0;    // dict: fields set so far (a repeated known key bails)
  uint32_t value = 0;   // frames: provisional StackId so far; blocks/roundup: first pending index;
                        // trace: device index; frame: its provisional FrameId once complete
  bool read = false;    // frames: its memo entry was read while open (so it must not grow)
};

struct PendingBlock {
  Block block;
  bool has_address;
};

struct Staged {
  TraceEvent e;
  uint32_t parent;
};

// Thrown (and caught in fast_build) at the first form the fast path does not handle.
struct Bail {
  int line;
  const char* file;
};
[[noreturn, gnu::cold, gnu::noinline]] inline void bail(int line = __builtin_LINE(),
                                                        const char* file = __builtin_FILE()) {
  throw Bail{line, file};
}
/// Where the fast path says what it chose (LoadOptions::diagnostics).
using Diagnostics = std::function<void(const std::string&)>;
/// "containers.cpp:123" for a Bail's source line.
inline std::string where(const Bail& b) {
  std::string f = b.file ? b.file : "?";
  size_t slash = f.rfind('/');
  return (slash == std::string::npos ? f : f.substr(slash + 1)) + ":" + std::to_string(b.line);
}

// Thrown by the second half of a split parse at the first opcode below the context it was
// started in (the end of device_traces' batch): its work is done.
struct TailStop {};

}  // namespace memsnap::snapshot::detail::fast
