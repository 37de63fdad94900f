// The snapshot model: every file form (dict, list, legacy history, JSON) normalised into one shape.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "memsnap/util/hash.hpp"

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
  StrId intern(std::string_view s);
  std::string_view operator[](StrId id) const { return views_[id.v]; }
  size_t size() const { return views_.size(); }

 private:
  std::deque<std::string> storage_;
  std::vector<std::string_view> views_;
  std::unordered_map<std::string_view, uint32_t, util::Hasher> index_;  // seeded: see util/hash.hpp
};

struct Frame {
  StrId filename;
  StrId name;
  int64_t line = 0;
};

class FrameTable {
 public:
  FrameId intern(const Frame& f);
  const Frame& operator[](FrameId id) const { return frames_[id.v]; }
  size_t size() const { return frames_.size(); }

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

 private:
  std::vector<FrameId> frames_;
  std::vector<std::pair<uint32_t, uint32_t>> ranges_;  // start, length
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
  bool address_derived = false;   // the file gave no address; computed from the segment
  bool requested_known = false;   // the file gave requested_size or history real_size

  bool is_active() const { return state != BlockState::Inactive; }
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
};

enum class Action : uint8_t {
  Alloc, FreeRequested, FreeCompleted, SegmentAlloc, SegmentFree, SegmentMap, SegmentUnmap, Snapshot, Oom,
  Free,     // very early torch; kept for completeness
  Unknown,  // an action this version of memsnap does not know (kept so indices match the file)
};
const char* to_string(Action a);

struct TraceEvent {
  static constexpr int64_t kNoTime = std::numeric_limits<int64_t>::min();
  uint64_t addr = 0;     // block or segment address; for Oom, the device_free bytes (see device_free())
  uint64_t size = 0;     // requested bytes (alloc/free), segment bytes, or rounded request (oom)
  uint64_t stream = 0;
  int64_t time_us = kNoTime;
  StackId stack;
  Action action = Action::Unknown;

  bool has_time() const { return time_us != kNoTime; }
  uint64_t device_free() const { return action == Action::Oom ? addr : 0; }
};

struct Device {
  int index = 0;
  std::vector<Segment> segments;  // in file order (address order within a device)
  std::vector<Block> blocks;      // all blocks, grouped by segment
  std::vector<TraceEvent> trace;  // oldest to newest, indices as in the file

  std::span<const Block> blocks_of(const Segment& s) const { return {blocks.data() + s.first_block, s.block_count}; }
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
};

/// A record_function / user annotation (`external_annotations`, torch >= 2.5).
struct Annotation {
  int device = 0;
  int64_t time_us = TraceEvent::kNoTime;
  StrId name;
  StrId stage;  // "START" / "END" for record_function scopes
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
  bool legacy_history = false;   // blocks carry 1.13/2.0 `history` instead of frames
  /// Non-fatal oddities found while building ("warning: ..." lines, JSON `warnings`).
  std::vector<std::string> warnings;

  const Device* device(int index) const;
  std::string frame_text(FrameId f) const;  // "file.py:12:name"
};

}  // namespace memsnap::snapshot
