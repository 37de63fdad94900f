// The snapshot model: every file form (dict, list, legacy history, JSON) normalised into one shape.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "memsnap/util/columns.hpp"
#include "memsnap/util/hash.hpp"
#include "memsnap/util/pod_buffer.hpp"

namespace memsnap::snapshot {

/// A typed index, so that ids of different tables cannot be mixed up.
template <class Tag>
struct Id {
  uint32_t v = 0;
  friend bool operator==(Id a, Id b) { return a.v == b.v; }
  friend auto operator<=>(Id a, Id b) { return a.v <=> b.v; }
};
struct StrTag;
struct FrameTag;
struct StackTag;
using StrId = Id<StrTag>;
using FrameId = Id<FrameTag>;
using StackId = Id<StackTag>;  // StackId{0} is the empty stack

/// Interned strings owned by the model (independent of the input buffer).
class StringTable {
 public:
  StringTable();
  /// A copy holds strings of its own with the same ids (the views point into this table's
  /// storage, never into the source's); a move keeps the storage where it is.
  StringTable(const StringTable& o);
  StringTable& operator=(const StringTable& o);
  StringTable(StringTable&&) = default;
  StringTable& operator=(StringTable&&) = default;
  StrId intern(std::string_view s);
  std::string_view operator[](StrId id) const { return views_[id.v]; }
  size_t size() const { return views_.size(); }
  size_t memory_bytes() const { return bytes_ + views_.capacity() * 16 + index_.size() * 48; }
  /// The same strings with the same ids.
  bool operator==(const StringTable& o) const { return views_ == o.views_; }

 private:
  std::deque<std::string> storage_;
  size_t bytes_ = 0;
  std::vector<std::string_view> views_;
  std::unordered_map<std::string_view, uint32_t, util::Hasher> index_;  // seeded: see util/hash.hpp
};

struct Frame {
  StrId filename;
  StrId name;
  int64_t line = 0;
  bool operator==(const Frame&) const = default;
};

class FrameTable {
 public:
  FrameId intern(const Frame& f);
  const Frame& operator[](FrameId id) const { return frames_[id.v]; }
  size_t size() const { return frames_.size(); }
  size_t memory_bytes() const { return frames_.capacity() * sizeof(Frame) + index_.size() * 48; }
  bool operator==(const FrameTable& o) const { return frames_ == o.frames_; }

 private:
  struct Key {
    uint32_t file, name;
    int64_t line;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    KeyHash() : seed(util::hash_seed()) {}
    uint64_t seed;
    size_t operator()(const Key& k) const {
      return util::hash_u64(util::hash_u64(uint64_t(k.file) << 32 | k.name, seed) ^ uint64_t(k.line), seed);
    }
  };
  std::vector<Frame> frames_;
  std::unordered_map<Key, uint32_t, KeyHash> index_;
};

/// Whole stacks (innermost frame first), interned by content.
class StackTable {
 public:
  StackTable();
  StackId intern(std::span<const FrameId> frames);
  std::span<const FrameId> operator[](StackId id) const {
    return {frames_.data() + ranges_[id.v].first, ranges_[id.v].second};
  }
  size_t size() const { return ranges_.size(); }
  /// Whether any stack has a frame: the file was recorded with stacks (stack 0 is the empty one).
  bool has_frames() const { return !frames_.empty(); }
  size_t memory_bytes() const { return frames_.capacity() * 4 + ranges_.capacity() * 8 + index_.size() * 40; }
  /// The same stacks with the same ids.
  bool operator==(const StackTable& o) const;

 private:
  std::vector<FrameId> frames_;
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;                // start, length
  std::unordered_multimap<uint64_t, uint32_t, util::Hasher> index_;  // seeded content hash -> stack
  uint64_t seed_ = util::hash_seed();
};

enum class BlockState : uint8_t { ActiveAllocated, ActivePendingFree, Inactive };
enum class Pool : uint8_t { Small, Large, Unknown };

const char* to_string(BlockState s);
const char* to_string(Pool p);

struct Block {
  uint64_t address = 0;
  uint64_t size = 0;
  /// Bytes the user asked for (requested_size, or legacy history[0].real_size,
  /// else size). Only meaningful for active blocks: torch leaves it stale on free ones.
  uint64_t requested_size = 0;
  StackId stack;
  BlockState state = BlockState::Inactive;
  bool address_derived = false;  // the file gave no address; computed from the segment
  bool requested_known = false;  // the file gave requested_size or history real_size

  bool is_active() const { return state != BlockState::Inactive; }
  bool operator==(const Block&) const = default;
};

struct Segment {
  uint64_t address = 0;
  uint64_t total_size = 0;
  uint64_t stream = 0;  // cudaStream_t as an integer; 0 is the legacy default stream
  Pool pool = Pool::Unknown;
  int64_t pool_id[2] = {0, 0};  // (0, 0) is the default pool; others are CUDA-graph / MemPool pools
  bool expandable = false;
  StackId stack;
  uint32_t file_index = 0;   // position in the file's segments list (for messages)
  uint32_t first_block = 0;  // index into Device::blocks
  uint32_t block_count = 0;
  // The segment's own totals as the file states them (absent in some forms).
  std::optional<uint64_t> stated_allocated, stated_active, stated_requested;
  bool operator==(const Segment&) const = default;
};

enum class Action : uint8_t {
  Alloc,
  FreeRequested,
  FreeCompleted,
  SegmentAlloc,
  SegmentFree,
  SegmentMap,
  SegmentUnmap,
  Snapshot,
  Oom,
  Free,     // very early torch; kept for completeness
  Unknown,  // an action this version of memsnap does not know (kept so indices match the file)
};
const char* to_string(Action a);

struct TraceEvent {
  static constexpr int64_t kNoTime = std::numeric_limits<int64_t>::min();
  uint64_t addr = 0;  // block or segment address; for Oom, the device_free bytes (see device_free())
  uint64_t size = 0;  // requested bytes (alloc/free), segment bytes, or rounded request (oom)
  uint64_t stream = 0;
  int64_t time_us = kNoTime;
  StackId stack;
  Action action = Action::Unknown;

  bool has_time() const { return time_us != kNoTime; }
  uint64_t device_free() const { return action == Action::Oom ? addr : 0; }
  bool operator==(const TraceEvent&) const = default;
};

/// A device's trace events, oldest to newest, stored as columns (13 to 19 bytes an
/// event instead of 40): the address's low 32 bits and its upper half, the size (32
/// bits, larger ones in a side table), the time as a 32-bit offset from a base kept
/// per 4096 events (others in a side table), the stack, the action and the stream.
/// Upper halves and streams are 2-byte indices into a table of the distinct values
/// (util::DictColumn, the values themselves past 65,535 of them); those two and the
/// stack take no space while constant (util::LazyColumn): one 4 GiB region, one
/// stream, no stacks recorded. Reads give a TraceEvent by value: `trace[i]`,
/// range-for and iterators work as on a vector of TraceEvent, but an event cannot be
/// changed in place.
class Trace {
 public:
  using Iterator = util::IndexIterator<Trace, TraceEvent>;
  using value_type = TraceEvent;
  using const_iterator = Iterator;
  using iterator = Iterator;

  Trace() = default;
  Trace(const Trace& o) { *this = o; }
  Trace(Trace&&) noexcept = default;
  Trace& operator=(const Trace& o);
  Trace& operator=(Trace&&) noexcept = default;
  Trace(std::initializer_list<TraceEvent> events) {
    for (const TraceEvent& e : events) push_back(e);
  }
  Trace& operator=(std::initializer_list<TraceEvent> events) {
    clear();
    for (const TraceEvent& e : events) push_back(e);
    return *this;
  }

  size_t size() const { return action_.size(); }
  bool empty() const { return action_.size() == 0; }
  /// One field of event i, without decoding the others.
  uint64_t addr_at(size_t i) const { return uint64_t{addr_hi_[i]} << 32 | addr_lo_[i]; }
  uint64_t size_at(size_t i) const { return size_[i] != kEscaped ? size_[i] : escaped(big_sizes_, i); }
  StackId stack_at(size_t i) const { return StackId{stack_[i]}; }
  Action action_at(size_t i) const { return action_[i]; }
  TraceEvent operator[](size_t i) const {
    TraceEvent e;
    e.addr = addr_at(i);
    e.size = size_at(i);
    e.stream = stream_[i];
    int32_t t = time_[i];
    e.time_us = t == kNoTimeDelta   ? TraceEvent::kNoTime
                : t == kEscapedTime ? static_cast<int64_t>(escaped(big_times_, i))
                                    : time_base_[i >> kBlockShift] + t;
    e.stack = StackId{stack_[i]};
    e.action = action_[i];
    return e;
  }
  /// The action column alone (cheap: one byte an event).
  std::span<const Action> actions() const { return {action_.data(), action_.size()}; }
  TraceEvent front() const { return (*this)[0]; }
  TraceEvent back() const { return (*this)[size() - 1]; }
  Iterator begin() const { return Iterator(this, 0); }
  Iterator end() const { return Iterator(this, size()); }
  std::reverse_iterator<Iterator> rbegin() const { return std::reverse_iterator<Iterator>(end()); }
  std::reverse_iterator<Iterator> rend() const { return std::reverse_iterator<Iterator>(begin()); }

  void push_back(const TraceEvent& e);
  void reserve(size_t n);
  void clear();
  /// Gives back the memory reserved for growth beyond the last event (see PodBuffer::trim).
  void trim();
  /// Bytes the columns and side tables hold.
  size_t memory_bytes() const;
  /// The same events (however they are encoded).
  bool operator==(const Trace& o) const;
  /// Replaces every event's stack id s by f(s) (a builder that renumbers its stacks).
  template <class F>
  void remap_stacks(F f) {
    stack_.transform(f);
  }
  /// Appends src's events, each stack id s as f(s): the columns that need no re-encoding
  /// are copied whole (a parse in two halves joins its second half's events this way).
  template <class F>
  void append(const Trace& src, F f) {
    size_t n = size(), m = src.size();
    reserve(n + m);
    append_columns(src);
    stack_.append(src.stack_, f);
  }

 private:
  static constexpr uint32_t kEscaped = 0xFFFFFFFFu;
  static constexpr int32_t kNoTimeDelta = std::numeric_limits<int32_t>::min();
  static constexpr int32_t kEscapedTime = kNoTimeDelta + 1;
  static constexpr unsigned kBlockShift = 12;
  static uint64_t escaped(const std::vector<std::pair<uint64_t, uint64_t>>& side, size_t i);
  void push_time(size_t i, int64_t time_us);
  int32_t encode_time(size_t i, int64_t time_us);
  void append_columns(const Trace& src);  // every column but stack_

  // Columns grow by realloc (mremap when large): no copy, no second peak.
  util::PodBuffer<uint32_t> addr_lo_;
  util::DictColumn<uint32_t> addr_hi_;  // the upper halves
  util::PodBuffer<uint32_t> size_;
  util::PodBuffer<int32_t> time_;
  util::LazyColumn<uint32_t> stack_;
  util::PodBuffer<Action> action_;
  util::DictColumn<uint64_t> stream_;
  std::vector<int64_t> time_base_;                                    // per block of 2^kBlockShift events
  std::vector<std::pair<uint64_t, uint64_t>> big_sizes_, big_times_;  // (event index, value), by index
};

struct Device {
  int index = 0;
  std::vector<Segment> segments;  // in file order (address order within a device)
  std::vector<Block> blocks;      // all blocks, grouped by segment
  Trace trace;                    // oldest to newest, indices as in the file

  std::span<const Block> blocks_of(const Segment& s) const { return {blocks.data() + s.first_block, s.block_count}; }
  /// Bytes the device's arrays hold (for the memory bound).
  size_t memory_bytes() const {
    return segments.capacity() * sizeof(Segment) + blocks.capacity() * sizeof(Block) + trace.memory_bytes();
  }
  bool operator==(const Device&) const = default;
};

struct AllocatorSettings {
  bool present = false;
  std::string alloc_conf;                  // PYTORCH_CUDA_ALLOC_CONF as recorded
  std::optional<uint64_t> max_split_size;  // absent or unlimited when nullopt
  double garbage_collection_threshold = 0;
  bool expandable_segments = false;
  /// (bucket in MiB as torch reports it: "1", "2", ... "32768"; divisions, 0 = off)
  std::vector<std::pair<uint64_t, uint64_t>> roundup_power2_divisions;
  std::optional<bool> trace_alloc_overflowed;
  std::optional<int64_t> trace_alloc_max_entries;
  bool operator==(const AllocatorSettings&) const = default;
};

/// A record_function / user annotation (`external_annotations`, torch >= 2.5).
struct Annotation {
  int device = 0;
  int64_t time_us = TraceEvent::kNoTime;
  StrId name;
  StrId stage;  // "START" / "END" for record_function scopes
  bool operator==(const Annotation&) const = default;
};

enum class Form : uint8_t { Dict, List };
const char* to_string(Form f);

struct Snapshot {
  Form form = Form::Dict;
  std::vector<Device> devices;  // sorted by device index
  StringTable strings;
  FrameTable frames;
  StackTable stacks;
  AllocatorSettings settings;
  std::vector<Annotation> annotations;
  bool legacy_history = false;  // blocks carry 1.13/2.0 `history` instead of frames
  /// Non-fatal oddities found while building ("warning: ..." lines, JSON `warnings`).
  std::vector<std::string> warnings;

  const Device* device(int index) const;
  /// Bytes the string, frame and stack tables hold, about (for the memory bound).
  size_t tables_bytes() const;
  std::string frame_text(FrameId f) const;  // "file.py:12:name"
  /// Every table, device and field equal, ids and order included (two parsers of one file).
  bool operator==(const Snapshot&) const = default;
};

/// Where two snapshots first differ, as a path and both values
/// ("devices[0].segments[3].stated_allocated: 4096 vs none"), or "" when they are equal.
std::string first_difference(const Snapshot& a, const Snapshot& b);

}  // namespace memsnap::snapshot
