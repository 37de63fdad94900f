// Trace replay: one pass back to the window's start, one forward sweep that records
// what every analysis needs, and the allocator state at any event from checkpoints.
//
// Why it works backwards first. The trace is a ring buffer that usually starts
// mid-run: blocks freed in the window were allocated before it, blocks live at
// the dump may have no alloc in it, segments predate it. The dump's `segments`
// list, though, is the exact state after the last event. Undoing the events from
// the last to the first therefore yields the exact state at the start of the
// window (which blocks and segments existed, and which of them were pending);
// sweeping forwards from there reproduces every intermediate state and ends, by
// construction, at the dumped one. Where an event contradicts the state it meets
// (a free of a block that is not live, an alloc outside every segment), the replay
// repairs what it must, records the first such event and reports itself
// inconsistent rather than asserting.
//
// What the forward sweep records. Every block live at some point of the window is
// one LiveRange: where it begins (its alloc event, or the window's start), where
// the program freed it (free_requested) and where the allocator took it back
// (free_completed), or never. Segment events are kept in order. From these, the
// state after any event is rebuilt without touching the trace again: checkpoints
// taken every K events (K at least 4096 and at least the number of live blocks,
// so checkpoints never hold more ids than the trace has events) list the ranges
// live there; the state after event i is the nearest checkpoint's live ranges
// still live at i, plus the ranges that began since, plus the segment events
// since the start. The sweep also keeps the allocated, active and reserved totals
// at their peaks and at every OOM; TotalsCursor recomputes them after every event
// from the ranges, in one forward pass.
//
// Sizes: the trace says where each block went, the allocator model
// (allocator_model.hpp) says how big it was. The sweep carries an AllocatorModel
// in follow mode from the rewound start state: at each alloc it finds the free
// block at the alloc's address and applies should_split, so a block handed out
// whole (a large-pool remainder of 1 MiB or less, a block of max_split_size or
// more) counts all its bytes, as torch.cuda.memory_allocated() does. A block that
// survives to the dump has the dumped size. Blocks live at the window's start
// with no dumped size take the free space after their rounded request when it
// is too small to have been split off. At the end the model's layout is compared
// with the dumped segments block for block (layout_check()): equal, the figures
// at every event are the allocator's own; where the model could not follow the
// trace (an alloc where it holds no free block) the block is counted as
// estimated and size_uncertainty() bounds the error.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "memsnap/analysis/allocator_model.hpp"
#include "memsnap/analysis/sites.hpp"
#include "memsnap/snapshot/model.hpp"
#include "memsnap/util/columns.hpp"
#include "memsnap/util/flat_map.hpp"
#include "memsnap/util/pod_buffer.hpp"

namespace memsnap::analysis {

struct Totals {
  uint64_t allocated = 0;  // Σ sizes of allocated blocks
  uint64_t active = 0;     // allocated + pending free
  uint64_t requested = 0;  // Σ requested bytes of allocated blocks
  uint64_t reserved = 0;   // Σ mapped segment bytes
};

/// An event index meaning "before the first event of the window".
inline constexpr uint32_t kWindowStart = 0xFFFFFFFFu;
/// An event index meaning "not in the window" (never freed before the dump).
inline constexpr uint32_t kNever = 0xFFFFFFFEu;

/// One block's life in the window. The replay stores 20 bytes a range and builds
/// this on each read (Replay::ranges()): a range's address, request and stack are
/// its alloc event's, read from the trace.
struct LiveRange {
  uint64_t addr = 0;
  uint64_t size = 0;
  uint64_t requested = 0;
  uint64_t allocated_before = 0;  // allocated bytes just before its alloc event (0 for the window start)
  snapshot::StackId stack;
  uint32_t begin = kWindowStart;  // alloc event, or kWindowStart
  uint32_t freed = kNever;        // free_requested (or free) event: no longer allocated from then on
  uint32_t end = kNever;          // free_completed (or free) event: no longer active from then on
  bool size_exact = true;
  bool pending_at_start = false;  // live at the window start as a pending free

  /// Allocated (not pending) right after event i.
  bool allocated_at(uint32_t i) const { return !pending_at_start && begins_by(i) && (freed == kNever || freed > i); }
  /// Allocated or pending right after event i.
  bool active_at(uint32_t i) const { return begins_by(i) && (end == kNever || end > i); }
  bool begins_by(uint32_t i) const { return begin == kWindowStart || begin <= i; }
};

struct ReplayMismatch {
  uint32_t event = 0;
  std::string what;
};

/// Totals after one event, with where it happened.
struct TotalsAt {
  uint32_t event = 0;
  Totals totals;
};

/// The replayed final layout against the dumped segments.
struct LayoutCheck {
  bool equal = false;
  uint64_t segments = 0, blocks = 0;  // compared
  std::string first_difference;       // empty when equal
  /// The first event the model could not follow (an alloc where it held no free block).
  std::optional<uint32_t> first_unfollowed_event;
};

struct ReplayOptions {
  /// Fewest events between checkpoints (also at least the live blocks there).
  size_t checkpoint_events = 4096;
};

/// A device state rebuilt at one event.
struct ReplayedState {
  snapshot::Device device;        // segments and blocks (free gaps as inactive blocks); no trace
  uint64_t estimated_blocks = 0;  // live blocks whose size was inferred from their request
  uint64_t size_uncertainty = 0;  // bound on how much larger those blocks may really be
  Totals totals;
};

class Replay;

/// The ranges of a replay, read by value: `ranges[i]`, range-for and std algorithms
/// work as on a vector of LiveRange.
class RangeView {
 public:
  using value_type = LiveRange;
  using Iterator = util::IndexIterator<RangeView, LiveRange>;
  explicit RangeView(const Replay* r) : r_(r) {}
  size_t size() const;
  bool empty() const { return size() == 0; }
  LiveRange operator[](size_t i) const;
  Iterator begin() const { return Iterator(this, 0); }
  Iterator end() const { return Iterator(this, size()); }

 private:
  const Replay* r_;
};

class Replay {
 public:
  Replay(const Context& ctx, const snapshot::Device& device, const ReplayOptions& options = {});
  Replay(const Replay&) = delete;  // ranges() refers to this object
  Replay& operator=(const Replay&) = delete;

  const snapshot::Device& device() const { return device_; }
  size_t events() const { return device_.trace.size(); }
  bool consistent() const { return !mismatch_.has_value(); }
  const std::optional<ReplayMismatch>& first_mismatch() const { return mismatch_; }
  /// Something was live or reserved before the first event of the window.
  bool window_starts_mid_run() const { return starts_mid_run_; }
  /// Blocks of the window whose size was inferred from their request.
  uint64_t estimated_blocks() const { return estimated_blocks_; }

  const Totals& start_totals() const { return start_totals_; }
  /// Every block live at some point of the window; those live at the start first,
  /// then by alloc event.
  const RangeView& ranges() const { return view_; }
  /// Range `id` (id < ranges().size()).
  LiveRange range(uint32_t id) const;
  /// One field of range `id` alone, for passes over every range that need one or two
  /// of them (range() decodes all of them: 56 bytes, several column reads).
  uint32_t begin_of(uint32_t id) const { return ranges_[id].begin; }
  uint32_t freed_of(uint32_t id) const { return ranges_[id].freed; }
  bool pending_at_start_of(uint32_t id) const { return ranges_[id].size_word & kPendingBit; }
  uint64_t size_of(uint32_t id) const;
  uint64_t requested_of(uint32_t id) const;
  snapshot::StackId stack_of(uint32_t id) const {
    return id < first_window_range_ ? start_info_[id].stack : device_.trace.stack_at(ranges_[id].begin);
  }
  uint64_t allocated_before_of(uint32_t id) const;
  /// The first range that began in the window: those before it were live at its start.
  uint32_t first_window_range() const { return first_window_range_; }
  /// Index into ranges() of the block allocated by alloc event `i`, or nullopt.
  std::optional<uint32_t> range_of_alloc(uint32_t event) const;

  /// The most allocated bytes after any event (the first such event), and likewise reserved.
  const std::optional<TotalsAt>& peak_allocated() const { return peak_allocated_; }
  const std::optional<TotalsAt>& peak_reserved() const { return peak_reserved_; }
  /// Whether the state when the recorded window opened (before event 0, with something
  /// already live or reserved) was above every event's: then it is the peak.
  bool allocated_peak_at_window_start() const { return start_peak_allocated_; }
  bool reserved_peak_at_window_start() const { return start_peak_reserved_; }
  /// The replayed final layout compared with the dump.
  const LayoutCheck& layout_check() const { return layout_check_; }
  /// Totals right after every oom event, in order.
  const std::vector<TotalsAt>& ooms() const { return ooms_; }

  /// The state right after event `index` (index < events()).
  ReplayedState state_after(uint32_t index) const;
  /// The state before the first event of the window.
  ReplayedState state_at_start() const;
  /// The bound on how much larger than estimated a block of this rounded size may be.
  uint64_t size_slack(uint64_t rounded) const;

 private:
  friend class RangeView;
  friend class TotalsCursor;
  size_t ranges_size() const { return ranges_.size(); }
  struct Seg {
    uint64_t end = 0;  // one past the last byte
    uint64_t stream = 0;
    snapshot::Pool pool = snapshot::Pool::Unknown;
    bool expandable = false;
    int64_t pool_id[2] = {0, 0};
    snapshot::StackId stack;
  };
  using SegMap = std::map<uint64_t, Seg>;

  // A range as stored: 20 bytes instead of LiveRange's 56.
  struct Stored {
    uint32_t begin = kWindowStart;
    uint32_t freed = kNever;
    uint32_t end = kNever;
    uint32_t size_word = 0;     // see encode_size
    uint32_t before_units = 0;  // allocated_before / 512, or kBigBefore: in big_before_
  };
  // What a range live at the window's start has no alloc event to read from.
  struct StartInfo {
    uint64_t addr = 0;
    uint64_t requested = 0;
    snapshot::StackId stack;
  };
  static constexpr uint32_t kExactBit = 1u << 30;
  static constexpr uint32_t kPendingBit = 1u << 31;
  static constexpr uint32_t kUnitsMask = kExactBit - 1;  // size / 512, or kUnitsMask: in big_sizes_
  static constexpr uint32_t kBigBefore = 0xFFFFFFFFu;
  uint32_t encode_size(uint32_t id, uint64_t size, bool exact, bool pending);
  uint32_t encode_before(uint32_t id, uint64_t allocated_before);

  struct SweepState;
  void sweep_segment(SweepState& s, const snapshot::TraceEvent& e, uint32_t i);
  void undo(std::vector<LiveRange>& start_live, SegMap& segs);
  // A block the undo holds live: where its facts are (8 bytes, not a LiveRange: the map is
  // probed once per block event, and most entries are erased again a few events later).
  struct Undone {
    static constexpr uint32_t kFromDump = 1, kPending = 2;
    uint32_t from = 0;   // kFromDump: index of a dumped block in `dumped`; else the free event that made it
    uint32_t flags = 0;  // kFromDump: its size is the dumped block's (exact); kPending: a pending free
  };
  void undo_block_event(FlatMap64<Undone>& live, const std::vector<LiveRange>& dumped, snapshot::Action action,
                        uint64_t addr, uint32_t i);
  void undo_segment_event(SegMap& segs, const snapshot::TraceEvent& e, uint32_t i);
  void sweep(const ReplayOptions& options, AllocatorModel& model);
  void sweep_alloc(SweepState& s, const snapshot::TraceEvent& e, uint32_t i);
  void sweep_free(SweepState& s, const snapshot::TraceEvent& e, uint32_t i);
  void release(SweepState& s, uint32_t id, uint32_t i, bool completes);
  void record(SweepState& s, const snapshot::TraceEvent& e, uint32_t i);
  void checkpoint(SweepState& s, uint32_t i);
  /// Applies one segment event; returns the change in reserved bytes and, when the
  /// event contradicts the map, says why in `problem` (if given).
  int64_t apply_segment_event(SegMap& segs, const snapshot::TraceEvent& e, std::string* problem) const;
  snapshot::Pool guess_pool(uint64_t addr, uint64_t size, uint64_t stream, bool expandable) const;
  void note(uint32_t event, std::string what);
  snapshot::Device to_device(const SegMap& segs, const std::vector<LiveRange>& live,
                             const std::function<bool(const LiveRange&)>& allocated) const;

  const Context& ctx_;
  const snapshot::Device& device_;
  bool expandable_ = false;
  struct Base {
    uint64_t stream, address;
    snapshot::Pool pool;
  };
  std::vector<Base> expandable_bases_;  // dumped expandable ranges, by (stream, address)
  std::optional<ReplayMismatch> mismatch_;
  // (alloc event, size of its block) for each block that survives to the dump, by event
  std::vector<std::pair<uint32_t, uint64_t>> exact_size_;
  bool starts_mid_run_ = false;
  uint64_t estimated_blocks_ = 0;
  Totals start_totals_;
  SegMap start_segments_;
  util::PodBuffer<Stored> ranges_;     // huge pages, no regrowth copy
  std::vector<StartInfo> start_info_;  // for ranges_[0..first_window_range_)
  FlatMap64<uint64_t> big_sizes_;      // range id -> size, for sizes encode_size cannot hold
  FlatMap64<uint64_t> big_before_;     // range id -> allocated_before, likewise
  uint32_t first_window_range_ = 0;    // ranges_[first_window_range_..] began in the window, by begin
  RangeView view_{this};
  std::vector<uint32_t> segment_events_;  // indices of segment events, in order
  std::vector<uint64_t> reserved_after_;  // reserved bytes after each of them
  struct Checkpoint {
    uint32_t event = 0;            // state after this event
    uint32_t first_new_range = 0;  // ranges from here on began after it
    std::vector<uint32_t> live;    // range ids active after it
  };
  std::vector<Checkpoint> checkpoints_;
  std::optional<TotalsAt> peak_allocated_, peak_reserved_;
  bool start_peak_allocated_ = false, start_peak_reserved_ = false;
  LayoutCheck layout_check_;
  void seed_model(AllocatorModel& model, std::vector<LiveRange>& start_live);
  void check_layout(const AllocatorModel& model);
  std::vector<TotalsAt> ooms_;
};

/// The totals after each event, recomputed one event after another from the ranges:
/// what the sweep's running totals were, with no per-event storage. The sweep's live map is rebuilt on the way (live
/// blocks only); a range's own freed and end events say what each free took away.
class TotalsCursor {
 public:
  explicit TotalsCursor(const Replay& replay);
  /// The totals right after event i; i must not be less than the previous call's.
  const Totals& after(uint32_t i);

 private:
  void step(uint32_t i);
  void release(uint32_t id, uint32_t i);
  const Replay& r_;
  FlatMap64<uint32_t> live_;  // address -> range id
  Totals t_;
  uint32_t next_event_ = 0;
  uint32_t next_range_ = 0;
  size_t next_segment_ = 0;
};

inline size_t RangeView::size() const {
  return r_->ranges_size();
}
inline LiveRange RangeView::operator[](size_t i) const {
  return r_->range(static_cast<uint32_t>(i));
}

}  // namespace memsnap::analysis
