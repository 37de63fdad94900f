// Trace replay: the allocator's state at every event of a device's trace.
//
// Why it works backwards first. The trace is a ring buffer that usually starts
// mid-run: blocks freed in the window were allocated before it, blocks live at
// the dump may have no alloc in it, segments predate it. The dump's `segments`
// list, though, is the exact state after the last event. Undoing the events from
// the last to the first therefore yields the exact state at the start of the
// window (which blocks and segments existed, and which of them were pending);
// replaying forwards from there reproduces every intermediate state and ends,
// by construction, at the dumped one. Where an event contradicts the state it
// meets (a free of a block that is not live, an alloc outside every segment),
// the replay repairs what it must, records the first such event and reports
// itself inconsistent rather than asserting.
//
// Sizes: a block that survives to the dump has its exact size. A block that was
// allocated and freed inside the window only left its requested size in the
// trace; its size is then the allocator's rounding of that request (exact unless
// the large pool handed out a whole block without splitting it, where the true
// block is up to 1 MiB larger). Such blocks are counted in estimated_blocks().
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "memsnap/snapshot/model.hpp"

namespace memsnap::analysis {

struct ReplayTotals {
  uint64_t allocated = 0;  // Σ sizes of allocated blocks
  uint64_t active = 0;     // allocated + pending free
  uint64_t requested = 0;  // Σ requested bytes of allocated blocks
  uint64_t reserved = 0;   // Σ mapped segment bytes
};

inline constexpr uint32_t kBeforeWindow = 0xFFFFFFFFu;

struct LiveAlloc {
  uint64_t size = 0;
  uint64_t requested = 0;
  uint64_t stream = 0;
  snapshot::StackId stack;
  uint32_t alloc_event = kBeforeWindow;  // index of its alloc event, or kBeforeWindow
  bool pending = false;                  // freed by the program, awaiting other streams
  bool size_exact = true;
};

struct ReplaySegment {
  uint64_t end = 0;  // one past the last byte
  uint64_t stream = 0;
  snapshot::Pool pool = snapshot::Pool::Unknown;
  bool expandable = false;
  int64_t pool_id[2] = {0, 0};
  snapshot::StackId stack;
};

struct ReplayMismatch {
  uint32_t event = 0;
  std::string what;
};

class Replay;

/// The allocator state at one point of the trace. Cheap to copy at the start.
class ReplayState {
 public:
  const ReplayTotals& totals() const { return totals_; }
  const std::unordered_map<uint64_t, LiveAlloc>& live() const { return live_; }
  const std::map<uint64_t, ReplaySegment>& segments() const { return segments_; }
  /// Index of the last event applied (kBeforeWindow at the start of the window).
  uint32_t position() const { return position_; }
  /// Applies the next event.
  void step();
  /// Live blocks whose size is inferred from their request (see the note on sizes above).
  uint64_t estimated_live_blocks() const;
  /// The state as a device model (free gaps between live blocks become inactive
  /// blocks), so that every analysis of a dumped state runs on it unchanged.
  snapshot::Device to_device(int index) const;

 private:
  friend class Replay;
  const Replay* replay_ = nullptr;
  ReplayTotals totals_;
  std::unordered_map<uint64_t, LiveAlloc> live_;
  std::map<uint64_t, ReplaySegment> segments_;
  uint32_t position_ = kBeforeWindow;
};

class Replay {
 public:
  Replay(const snapshot::Snapshot& snap, const snapshot::Device& device);

  const snapshot::Device& device() const { return device_; }
  size_t events() const { return device_.trace.size(); }
  bool consistent() const { return !mismatch_.has_value(); }
  const std::optional<ReplayMismatch>& first_mismatch() const { return mismatch_; }
  /// Something was live or reserved before the first event of the window.
  bool window_starts_mid_run() const;
  uint64_t estimated_blocks() const { return estimated_blocks_; }
  /// The size of the block of alloc event `index` when it is still live at the dump, else 0.
  uint64_t surviving_size(uint32_t index) const {
    auto it = exact_size_.find(index);
    return it == exact_size_.end() ? 0 : it->second;
  }

  /// The state before the first event.
  ReplayState start() const { return start_; }
  /// The state after event `index` (replays from the start).
  ReplayState state_after(uint32_t index) const;

 private:
  friend class ReplayState;
  void undo_all(std::unordered_map<uint64_t, LiveAlloc>& live, std::map<uint64_t, ReplaySegment>& segs);
  void note(uint32_t event, std::string what);
  snapshot::Pool guess_pool(uint64_t addr, uint64_t size, uint64_t stream, bool expandable) const;

  const snapshot::Snapshot& snap_;
  const snapshot::Device& device_;
  ReplayState start_;
  std::unordered_map<uint32_t, uint64_t> exact_size_;  // alloc event -> size of a block that survives
  std::optional<ReplayMismatch> mismatch_;
  uint64_t estimated_blocks_ = 0;
  bool expandable_ = false;
};

}  // namespace memsnap::analysis
