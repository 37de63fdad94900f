// The schema-directed fast path: one pass over the opcodes builds the model, with no value graph.
//
// Why: the generic path (unpickle into a ValueGraph, then walk it) spends most of its
// time and memory on nodes and item ids it throws away. Here every value on the stack
// is a 16-byte Slot; a container is an "open record" whose role (segment, block, frames
// list, trace event, ...) is fixed when it is created, from its parent's role and the
// dict key or list position it is being built for. Its items are turned into model
// data when its parent consumes it (APPENDS, SETITEMS, ...), and the parent and
// key/position recorded at creation are checked again then, so a wrong guess can never
// produce a wrong model: anything unexpected makes fast_build return nullopt, and the
// caller runs the generic path, which then gives the same model or the exact error.
//
// The memo holds 4-byte handles: a frame dict becomes a FrameId, a frames list a
// StackId, a string or other atom an index into atoms_. A run of memo GETs inside a
// frames list (most of a real file's bytes) is recognised again by its raw bytes: the
// same bytes with the same memo contents mean the same stack. A trace event dict of the
// usual layout is decoded without touching the stack.
//
// Ids: the fast path meets segments before device_traces (the file's order), the
// generic builder walks traces first. Strings, frames and stacks are therefore interned
// into provisional tables and renumbered at the end in the generic builder's order, so
// every id and table is identical.
#include "fast_build.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "memsnap/pickle/long.hpp"
#include "memsnap/snapshot/validate.hpp"
#include "memsnap/util/hash.hpp"
#include "memsnap/util/pod_buffer.hpp"
#include "memsnap/util/prefault.hpp"

namespace memsnap::snapshot::detail {

namespace {

// ---- symbols: the strings the schema knows ------------------------------------------------
enum Sym : uint8_t {
  Y_none = 0,
  // keys
  Y_segments,
  Y_device_traces,
  Y_allocator_settings,
  Y_external_annotations,
  Y_device,
  Y_address,
  Y_total_size,
  Y_allocated_size,
  Y_active_size,
  Y_requested_size,
  Y_stream,
  Y_segment_type,
  Y_segment_pool_id,
  Y_is_expandable,
  Y_frames,
  Y_blocks,
  Y_size,
  Y_state,
  Y_history,
  Y_filename,
  Y_line,
  Y_name,
  Y_action,
  Y_addr,
  Y_time_us,
  Y_device_free,
  Y_conf,
  Y_max_split_size,
  Y_gc,
  Y_expandable_segments,
  Y_roundup,
  Y_overflowed,
  Y_max_entries,
  Y_stage,
  // values
  Y_active_allocated,
  Y_active_pending_free,
  Y_active_awaiting_free,
  Y_inactive,
  Y_alloc,
  Y_free_requested,
  Y_free_completed,
  Y_segment_alloc,
  Y_segment_free,
  Y_segment_map,
  Y_segment_unmap,
  Y_snapshot,
  Y_oom,
  Y_free,
  Y_count
};

constexpr std::string_view kSymText[Y_count] = {"",
                                                "segments",
                                                "device_traces",
                                                "allocator_settings",
                                                "external_annotations",
                                                "device",
                                                "address",
                                                "total_size",
                                                "allocated_size",
                                                "active_size",
                                                "requested_size",
                                                "stream",
                                                "segment_type",
                                                "segment_pool_id",
                                                "is_expandable",
                                                "frames",
                                                "blocks",
                                                "size",
                                                "state",
                                                "history",
                                                "filename",
                                                "line",
                                                "name",
                                                "action",
                                                "addr",
                                                "time_us",
                                                "device_free",
                                                "PYTORCH_CUDA_ALLOC_CONF",
                                                "max_split_size",
                                                "garbage_collection_threshold",
                                                "expandable_segments",
                                                "roundup_power2_divisions",
                                                "trace_alloc_overflowed",
                                                "trace_alloc_max_entries",
                                                "stage",
                                                "active_allocated",
                                                "active_pending_free",
                                                "active_awaiting_free",
                                                "inactive",
                                                "alloc",
                                                "free_requested",
                                                "free_completed",
                                                "segment_alloc",
                                                "segment_free",
                                                "segment_map",
                                                "segment_unmap",
                                                "snapshot",
                                                "oom",
                                                "free"};

uint8_t classify(const uint8_t* p, size_t n) {
  if (n < 3 || n > 28) return Y_none;
  for (uint8_t i = 1; i < Y_count; ++i)
    if (kSymText[i].size() == n && std::memcmp(kSymText[i].data(), p, n) == 0) return i;
  return Y_none;
}

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
  uint8_t sym = 0;
  uint16_t spare = 0;
  uint32_t a = 0;
  uint64_t b = 0;
};
static_assert(sizeof(Slot) == 16);

// ---- roles ----------------------------------------------------------------------------------
enum Role : uint8_t {
  R_bail,
  R_top,
  R_segments,
  R_segment,
  R_blocks,
  R_block,
  R_frames,
  R_frame,
  R_devtraces,
  R_trace,
  R_event,
  R_settings,
  R_roundup,
  R_annotations,
  R_annot,
  R_ignore
};
enum CKind : uint8_t { C_list, C_dict };

// The role of a container of kind `k` created as a value of key `key` (dict parent) or
// as an element (list parent) of a parent with role `parent`.
Role child_role(Role parent, CKind pk, uint8_t key, CKind k) {
  if (pk == C_dict) {
    switch (parent) {
      case R_top:
        if (key == Y_segments) return k == C_list ? R_segments : R_bail;
        if (key == Y_device_traces) return k == C_list ? R_devtraces : R_bail;
        if (key == Y_allocator_settings) return k == C_dict ? R_settings : R_bail;
        if (key == Y_external_annotations) return k == C_list ? R_annotations : R_bail;
        return R_ignore;
      case R_segment:
        if (key == Y_blocks) return k == C_list ? R_blocks : R_bail;
        if (key == Y_frames) return k == C_list ? R_frames : R_bail;
        if (key == Y_segment_pool_id) return R_bail;
        if (key == Y_device || key == Y_address || key == Y_total_size || key == Y_allocated_size ||
            key == Y_active_size || key == Y_requested_size || key == Y_stream || key == Y_segment_type ||
            key == Y_is_expandable)
          return R_bail;  // a container where the schema wants a scalar: the generic path says why
        return R_ignore;
      case R_block:
        if (key == Y_frames) return k == C_list ? R_frames : R_bail;
        if (key == Y_history || key == Y_size || key == Y_state || key == Y_address || key == Y_requested_size)
          return R_bail;
        return R_ignore;
      case R_event:
        if (key == Y_frames) return k == C_list ? R_frames : R_bail;
        if (key == Y_action || key == Y_addr || key == Y_size || key == Y_stream || key == Y_time_us ||
            key == Y_device_free)
          return R_bail;
        return R_ignore;
      case R_settings:
        if (key == Y_roundup) return k == C_dict ? R_roundup : R_ignore;
        if (key == Y_conf || key == Y_max_split_size || key == Y_gc || key == Y_expandable_segments ||
            key == Y_overflowed || key == Y_max_entries)
          return R_bail;
        return R_ignore;
      case R_frame:
        if (key == Y_filename || key == Y_line || key == Y_name) return R_bail;
        return R_ignore;
      case R_annot:
      case R_roundup:
      case R_ignore: return R_ignore;
      default: return R_bail;
    }
  }
  switch (parent) {
    case R_segments: return k == C_dict ? R_segment : R_bail;
    case R_blocks: return k == C_dict ? R_block : R_bail;
    case R_frames: return k == C_dict ? R_frame : R_bail;
    case R_devtraces: return k == C_list ? R_trace : R_bail;
    case R_trace: return k == C_dict ? R_event : R_bail;
    case R_annotations: return k == C_dict ? R_annot : R_ignore;
    case R_ignore: return R_ignore;
    default: return R_bail;
  }
}

// Fields each dict role reads, as slots in fields_.
enum {
  F_seg_device,
  F_seg_address,
  F_seg_total,
  F_seg_allocated,
  F_seg_active,
  F_seg_requested,
  F_seg_stream,
  F_seg_type,
  F_seg_pool,
  F_seg_expandable,
  F_seg_frames,
  F_seg_blocks,
  F_seg_N
};
enum { F_blk_address, F_blk_size, F_blk_requested, F_blk_state, F_blk_frames, F_blk_N };
enum { F_fr_filename, F_fr_line, F_fr_name, F_fr_N };
enum { F_ev_action, F_ev_addr, F_ev_size, F_ev_stream, F_ev_frames, F_ev_time, F_ev_device_free, F_ev_N };
enum { F_top_segments, F_top_traces, F_top_settings, F_top_annotations, F_top_N };
enum {
  F_set_conf,
  F_set_max_split,
  F_set_gc,
  F_set_expandable,
  F_set_roundup,
  F_set_overflowed,
  F_set_max_entries,
  F_set_N
};
enum { F_ann_device, F_ann_time, F_ann_name, F_ann_stage, F_ann_N };
constexpr int kNoField = -1;

int field_count(Role r) {
  switch (r) {
    case R_segment: return F_seg_N;
    case R_block: return F_blk_N;
    case R_frame: return F_fr_N;
    case R_event: return F_ev_N;
    case R_top: return F_top_N;
    case R_settings: return F_set_N;
    case R_annot: return F_ann_N;
    default: return 0;
  }
}

constexpr int field_of_switch(Role r, uint8_t sym) {
  switch (r) {
    case R_segment:
      switch (sym) {
        case Y_device: return F_seg_device;
        case Y_address: return F_seg_address;
        case Y_total_size: return F_seg_total;
        case Y_allocated_size: return F_seg_allocated;
        case Y_active_size: return F_seg_active;
        case Y_requested_size: return F_seg_requested;
        case Y_stream: return F_seg_stream;
        case Y_segment_type: return F_seg_type;
        case Y_segment_pool_id: return F_seg_pool;
        case Y_is_expandable: return F_seg_expandable;
        case Y_frames: return F_seg_frames;
        case Y_blocks: return F_seg_blocks;
        default: return kNoField;
      }
    case R_block:
      switch (sym) {
        case Y_address: return F_blk_address;
        case Y_size: return F_blk_size;
        case Y_requested_size: return F_blk_requested;
        case Y_state: return F_blk_state;
        case Y_frames: return F_blk_frames;
        default: return kNoField;
      }
    case R_frame:
      switch (sym) {
        case Y_filename: return F_fr_filename;
        case Y_line: return F_fr_line;
        case Y_name: return F_fr_name;
        default: return kNoField;
      }
    case R_event:
      switch (sym) {
        case Y_action: return F_ev_action;
        case Y_addr: return F_ev_addr;
        case Y_size: return F_ev_size;
        case Y_stream: return F_ev_stream;
        case Y_frames: return F_ev_frames;
        case Y_time_us: return F_ev_time;
        case Y_device_free: return F_ev_device_free;
        default: return kNoField;
      }
    case R_top:
      switch (sym) {
        case Y_segments: return F_top_segments;
        case Y_device_traces: return F_top_traces;
        case Y_allocator_settings: return F_top_settings;
        case Y_external_annotations: return F_top_annotations;
        default: return kNoField;
      }
    case R_settings:
      switch (sym) {
        case Y_conf: return F_set_conf;
        case Y_max_split_size: return F_set_max_split;
        case Y_gc: return F_set_gc;
        case Y_expandable_segments: return F_set_expandable;
        case Y_roundup: return F_set_roundup;
        case Y_overflowed: return F_set_overflowed;
        case Y_max_entries: return F_set_max_entries;
        default: return kNoField;
      }
    case R_annot:
      switch (sym) {
        case Y_device: return F_ann_device;
        case Y_time_us: return F_ann_time;
        case Y_name: return F_ann_name;
        case Y_stage: return F_ann_stage;
        default: return kNoField;
      }
    default: return kNoField;
  }
}

// field_of is asked for every key of every dict: as a call into the nested switches above
// it was 3% of a 1 GB load (perf). A table of roles by symbols, built at compile time from
// them, answers with one load.
struct FieldTable {
  int8_t of[R_ignore + 1][256];
  constexpr FieldTable() : of{} {
    for (int r = 0; r <= R_ignore; ++r)
      for (int y = 0; y < 256; ++y) of[r][y] = static_cast<int8_t>(field_of_switch(Role(r), uint8_t(y)));
  }
};
constexpr FieldTable kFieldTable;

inline int field_of(Role r, uint8_t sym) {
  return r <= R_ignore ? kFieldTable.of[r][sym] : kNoField;
}

constexpr uint32_t kNone32 = 0xFFFFFFFFu;

struct Open {
  Role role;
  CKind kind;
  uint8_t key = Y_none;  // dict parent: the key this container is the value of
  uint32_t parent;       // open record of the parent, kNone32 for the root
  uint32_t pos = 0;      // list parent: the element index this container will take
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
};
[[noreturn, gnu::cold, gnu::noinline]] void bail(int line = __builtin_LINE()) {
  throw Bail{line};
}
// MEMSNAP_FAST_DEBUG=1: where the fast path gave up, and how a split parse went.
bool fast_debug() {
  static const bool on = [] {
    const char* d = std::getenv("MEMSNAP_FAST_DEBUG");
    return d && *d == '1';
  }();
  return on;
}

// Thrown by the second half of a split parse at the first opcode below the context it was
// started in (the end of device_traces' batch): its work is done.
struct TailStop {};

// Memo: 4-byte handles in pages of 4096, a page allocated only when it holds a useful
// entry (trace event dicts, memoized by the pickler and never referenced, cost nothing).
class Memo {
 public:
  static constexpr uint32_t kAtom = 1u << 29, kFrame = 2u << 29, kStack = 3u << 29, kOpenList = 4u << 29,
                            kPayload = (1u << 29) - 1;
  Memo() = default;
  Memo(const Memo&) = delete;
  ~Memo() {
    for (void* c : chunks_) {
      util::forget_prefault(c, kChunk);
      munmap(c, kChunk);
    }
  }
  uint32_t get(uint64_t i) const {
    if (i >= limit_) return 0;
    return raw(i);
  }
  // The entry at i whatever the limit (a split parse's own entries, see copy_known).
  uint32_t raw(uint64_t i) const {
    uint64_t page = i >> 12;
    if (page >= pages_.size() || pages_[page] == nullptr) return 0;
    return pages_[page][i & 4095];
  }
  // Returns true when a frame entry was replaced by something else (remembered spans are stale).
  bool put(uint64_t i, uint32_t h) {
    uint64_t page = i >> 12;
    if (page >= pages_.size()) {
      if (h == 0) return false;
      pages_.resize(page + 1, nullptr);
    }
    uint32_t*& p = pages_[page];
    if (p == nullptr) {
      if (h == 0) return false;
      p = new_page();
    }
    uint32_t old = p[i & 4095];
    p[i & 4095] = h;
    return (old & ~kPayload) == kFrame && old != h;  // spans depend on frame entries only
  }
  size_t bytes() const { return pages_.size() * 8 + chunks_.size() * kChunk; }
  // An input read ahead (a large file) keeps a spare chunk from the first: its first few
  // chunks' faults were taken on the parsing thread (perf: Memo::put under
  // do_huge_pmd_wp_page, 5% of a 114 MB analyze).
  void large_input() { spare_from_ = 0; }
  // The second half of a split parse (see SplitParse): entries [0, n) are `from`'s frames and
  // atoms, and every index from n on is unknown here: get() reads no entry there. What this
  // half memoizes itself goes on from n, for raw() once the true index is known.
  void copy_known(const Memo& from, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) {
      uint32_t h = from.get(i), kind = h & ~kPayload;
      if (kind == kFrame || kind == kAtom) put(i, h);
    }
    limit_ = n;
  }
  uint64_t limit() const { return limit_; }

 private:
  // Pages come zeroed from 2 MiB anonymous mappings, 128 at a time: as calloc'd pages they
  // were memset on top of the kernel's own zeroing (perf: 4.7% of a 1 GB analyze, nearly
  // all of it here, since every event's frames list is memoized). The chunk after the one
  // in use is mapped early and prefaulted on the second core (see util/prefault.hpp), once
  // the memo has taken a few chunks: a small input is not made to hold a spare.
  static constexpr size_t kChunk = size_t{2} << 20;
  size_t spare_from_ = 4;        // chunks taken before a spare is kept (see large_input)
  uint64_t limit_ = UINT64_MAX;  // indices from here have no entry (copy_known)
  uint32_t* new_page() {
    if (chunk_left_ == 0) {
      void* c = spare_ ? spare_ : map_chunk();
      if (c == nullptr) bail();
      spare_ = nullptr;
      if (chunks_.size() >= spare_from_ && (spare_ = map_chunk())) util::prefault(spare_, kChunk);
      chunk_next_ = static_cast<uint32_t*>(c);
      chunk_left_ = kChunk / (4096 * sizeof(uint32_t));
    }
    uint32_t* p = chunk_next_;
    chunk_next_ += 4096;
    --chunk_left_;
    return p;
  }
  std::vector<uint32_t*> pages_;
  void* map_chunk() {
    void* c = util::map_huge_aligned(kChunk);
    if (c) chunks_.push_back(c);
    return c;
  }
  std::vector<void*> chunks_;  // every chunk mapped, spare_ included
  void* spare_ = nullptr;      // mapped, not yet in use
  uint32_t* chunk_next_ = nullptr;
  size_t chunk_left_ = 0;
};

// A remembered run of memo GETs inside a frames list: its bytes decode to `stack`
// as long as no memo entry has been replaced since (epoch).
struct Span {
  uint64_t hash;
  uint64_t offset;
  uint32_t len;
  uint32_t stack;
  uint32_t epoch;
  uint32_t next = 0xFFFFFFFFu;  // the span the next event's traceback had last time (a guess)
};

class FastBuilder {
 public:
  // `arriving`: the source of a streaming input, whose bytes past `in` are still being
  // decoded (nullptr: `in` is all of it).
  // `window`: the input read ahead into reused pages (see io/read_ahead.hpp), whose bytes
  // past `in` are still arriving and before the last release_before() are gone; `back` is
  // then the input's mapping, which has every byte, for reading a memoized string or span
  // again (nullptr: `in` is it, or with a window, there is none: the bytes of strings and
  // spans are copied as they are read, see kept_).
  FastBuilder(std::span<const uint8_t> in, const io::ByteSource* arriving, io::ReadAhead* window, const uint8_t* back,
              util::MemoryBudget* budget, const ProgressFn* progress, uint64_t progress_total,
              const SplitOptions& split = {})
      : begin_(in.data()),
        back_(back ? back : in.data()),
        keep_(window && !back),
        p_(in.data()),
        end_(in.data() + in.size()),
        arriving_(arriving),
        window_(window),
        budget_(budget),
        ticker_(progress, progress_total) {
    stack_.reserve(1024);
    opens_.reserve(256);
    next_release_ = window ? window->chunk() / 2 : UINT64_MAX;
    // A large input read ahead (a plain file from 64 MiB, or compressed input that says it
    // decodes to as much), a second core, memory to spare.
    if (window && window->size_hint() >= (uint64_t{64} << 20)) memo_.large_input();
    next_check_ = std::min(next_account_, next_release_);
    if (!window && !arriving && in.size() >= split.from) plan_split(split);
  }

  FastResult run();

 private:
  // ---- reading ------------------------------------------------------------------------
  void need(uint64_t n) {
    if (uint64_t(end_ - p_) < n && !more(p_, n)) bail();
  }
  // A streaming input: waits until `n` bytes from `p` have arrived. False when the input
  // ended (or failed) short of them.
  // With a read-ahead window, also false when the window cannot hold them: the generic
  // path then reads the mapping.
  [[gnu::noinline]] bool more(const uint8_t* p, uint64_t n) {
    uint64_t at = off(p);
    size_t want = n > SIZE_MAX - at ? SIZE_MAX : size_t(at + n);
    if (window_)
      end_ = begin_ + window_->wait_for(want);
    else if (arriving_)
      end_ = begin_ + arriving_->wait_for(want);
    else
      return false;
    return uint64_t(end_ - p) >= n;
  }
  // FRAME's length is a buffering hint: the bytes must exist, but a window need not hold
  // them all at once. A decoding window's size() is only its limit until the decoder ends,
  // so the furthest frame end is kept and checked against the decoded size at STOP.
  bool frame_fits(const uint8_t* q, uint64_t n) {
    if (window_) {
      if (n > window_->size() - off(q)) return false;
      frame_end_ = std::max(frame_end_, off(q) + n);
      return true;
    }
    return n <= uint64_t(end_ - q) || more(q, n);
  }
  template <class T>
  T rd() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, p_, sizeof v);
    p_ += sizeof v;
    return v;
  }
  uint64_t off(const uint8_t* p) const { return uint64_t(p - begin_); }

  // ---- stack ----------------------------------------------------------------------------
  void push(const Slot& s) {
    if (stack_.size() >= (size_t{1} << 22)) bail();
    stack_.push_back(s);
  }
  size_t fence() const { return marks_.empty() ? 0 : marks_.back(); }
  Slot pop() {
    if (stack_.size() <= fence()) bail();
    Slot s = stack_.back();
    stack_.pop_back();
    return s;
  }

  // ---- atoms --------------------------------------------------------------------------
  Slot str_slot(const uint8_t* p, uint64_t n) {
    if (n > 0xFFFFFFFFu) bail();
    Slot s;
    s.tag = kStr;
    s.a = static_cast<uint32_t>(n);
    s.b = keep_ ? keep(p, n) : off(p);
    s.sym = classify(p, n);
    return s;
  }
  std::string_view str(const Slot& s) const { return std::string_view(reinterpret_cast<const char*>(again(s.b)), s.a); }
  // Where bytes read before are read again: at their offset in the input, or in kept_.
  const uint8_t* again(uint64_t at) const { return keep_ ? kept_.data() + at : back_ + at; }
  // Copies bytes the window will not hold for long; returns where they are in kept_.
  uint64_t keep(const uint8_t* p, uint64_t n) {
    uint64_t at = kept_.size();
    kept_.insert(kept_.end(), p, p + n);
    return at;
  }
  static Slot int_slot(int64_t v) {
    Slot s;
    s.tag = kInt;
    s.b = static_cast<uint64_t>(v);
    return s;
  }
  // LONG1 / LONG4 payload, classified as ValueGraph::make_int_bytes does (one decoder).
  static Slot long_slot(const uint8_t* p, size_t len) {
    pickle::DecodedLong d = pickle::decode_long(p, len);
    Slot s;
    switch (d.kind) {
      case pickle::DecodedLong::Signed: return int_slot(static_cast<int64_t>(d.bits));
      case pickle::DecodedLong::Unsigned:
        s.tag = kUInt;
        s.b = d.bits;
        return s;
      case pickle::DecodedLong::Big: break;
    }
    s.tag = kBig;
    return s;
  }

  // An integer opcode at q whose argument lies within q's next 16 bytes (the caller has
  // checked they exist): BININT1, BININT2, BININT or LONG1 of 1 to 8 bytes. Sets v as the
  // general decoding does and returns the opcode's length, or returns 0 for anything else.
  [[gnu::always_inline]] static uint8_t int_op(const uint8_t* q, Slot& v) {
    switch (q[0]) {
      case 'K': v = int_slot(q[1]); return 2;
      case 'M': {
        uint16_t x;
        std::memcpy(&x, q + 1, 2);
        v = int_slot(x);
        return 3;
      }
      case 'J': {
        int32_t x;
        std::memcpy(&x, q + 1, 4);
        v = int_slot(x);
        return 5;
      }
      case 0x8a: {
        uint8_t n = q[1];
        if (n == 0 || n > 8) return 0;
        uint64_t u;
        std::memcpy(&u, q + 2, 8);  // within the 16 bytes; the payload's n low bytes, little-endian
        unsigned drop = 64 - 8 * unsigned(n);
        v = int_slot(static_cast<int64_t>(u << drop) >> drop);  // sign-extended from its top byte
        return uint8_t(2 + n);
      }
      default: return 0;
    }
  }

  // ---- typed reads, mirroring the generic builder (anything it would refuse: bail) ----
  static uint64_t size_of(const Slot& s) {
    if (s.tag == kInt && int64_t(s.b) >= 0) return s.b;
    if (s.tag == kUInt) return s.b;
    bail();
  }
  static uint64_t bits_of(const Slot& s) {
    if (s.tag == kInt || s.tag == kUInt) return s.b;
    bail();
  }
  static int64_t int_of(const Slot& s) {
    if (s.tag == kInt) return int64_t(s.b);
    bail();
  }
  static bool bool_of(const Slot& s) {
    if (s.tag == kBool || s.tag == kInt || s.tag == kUInt) return s.b != 0;
    bail();
  }
  std::string_view str_of(const Slot& s) const {
    if (s.tag != kStr) bail();
    return str(s);
  }
  uint32_t stack_of(const Slot& s) {
    if (s.tag == kStack) return s.a;
    if (s.tag != kDeferred) bail();
    deferred_[s.a & ~kDeferredStack].use |= Deferred::kStackUse;
    return s.a;
  }
  // Deferred GETs are 8 bytes each, and a GET may be 2: a hostile input could make them four
  // times its size. The second half gives up past a sixteenth of the input's count (half its
  // size in records; a training loop defers one in three events, ~1 per 400 bytes).
  size_t deferred_cap() const { return std::min<size_t>(size_t(end_ - begin_) / 16, 0x7FFFFFF0u); }
  // The second half of a split parse: a frame dict it does not know, by memo index.
  FrameId deferred_frame(uint64_t idx, uint64_t count) {
    if (idx >= kDeferredFrame || count > Deferred::kCount || deferred_frames_.size() >= deferred_cap()) bail();
    deferred_frames_.push_back({uint32_t(idx), uint32_t(count)});
    return FrameId{kDeferredFrame | uint32_t(idx)};
  }
  // The second half of a split parse: a GET of an index it does not know, checked and
  // resolved when the first half takes its work (take_tail).
  Slot defer(uint64_t idx, uint64_t count) {
    if (deferred_.size() >= deferred_cap() || idx > UINT32_MAX || count > Deferred::kCount) bail();
    deferred_.push_back({uint32_t(idx), uint32_t(count)});
    Slot s;
    s.tag = kDeferred;
    s.a = kDeferredStack | uint32_t(deferred_.size() - 1);
    return s;
  }

  // ---- memo ---------------------------------------------------------------------------
  uint32_t handle_of(const Slot& s) {
    switch (s.tag) {
      case kFrame: return s.a & kDeferredFrame ? 0 : Memo::kFrame | s.a;  // no handle for a frame not known yet
      case kStack: return Memo::kStack | s.a;
      case kNone:
      case kBool:
      case kInt:
      case kUInt:
      case kBig:
      case kFloat:
      case kStr:
      case kTuple:
      case kOther:
        if (atoms_.size() > Memo::kPayload) bail();
        atoms_.push_back(s);
        return Memo::kAtom | uint32_t(atoms_.size() - 1);
      default: return 0;
    }
  }
  void memo_put(uint64_t idx, const Slot& top) {
    if (idx > off(p_) + 65536) bail();  // the generic path keeps hostile indices in a sparse map
    if (top.tag == kOpen) {
      Open& o = opens_[top.a];
      if (o.memo != kNone32 || idx > 0xFFFFFFF0u) bail();
      o.memo = static_cast<uint32_t>(idx);
      if (memo_.put(idx, o.role == R_frames ? Memo::kOpenList | top.a : 0)) ++epoch_;
      return;
    }
    if (memo_.put(idx, handle_of(top))) ++epoch_;
  }
  Slot memo_get(uint64_t idx) {
    uint32_t h = memo_.get(idx);
    if (tail_ && (h == 0 || (h & ~Memo::kPayload) == Memo::kStack)) [[unlikely]]
      return defer(idx, memo_count_);
    Slot s;
    switch (h & ~Memo::kPayload) {
      case Memo::kAtom: return atoms_[h & Memo::kPayload];
      case Memo::kFrame:
        s.tag = kFrame;
        s.a = h & Memo::kPayload;
        return s;
      case Memo::kStack:
        s.tag = kStack;
        s.a = h & Memo::kPayload;
        return s;
      case Memo::kOpenList: {
        // A frames list that is complete but not yet taken by its parent (a block
        // sharing its segment's traceback): its stack so far, and it may not grow again.
        Open& o = opens_[h & Memo::kPayload];
        if (o.memo != idx || o.role != R_frames) bail();
        o.read = true;
        s.tag = kStack;
        s.a = o.value;
        return s;
      }
      default: bail();
    }
  }
  void note_memoize() {
    if (used_put_) bail();
    used_memoize_ = true;
  }
  void note_put() {
    if (used_memoize_) bail();
    used_put_ = true;
  }

  // ---- containers ---------------------------------------------------------------------
  void open_container(CKind k);
  Slot finish(uint32_t rec);
  void consume(uint32_t rec, const Slot* items, size_t n);
  void make_tuple(const Slot* items, size_t n);
  bool try_frames_span(uint32_t rec);
  uint32_t decode_span(const uint8_t* a, const uint8_t* b);
  uint32_t extend_stack(uint32_t base, std::span<const FrameId> more);
  bool try_event(uint32_t parent_rec, bool open = true);
  void more_events(uint32_t parent_rec);
  // A training loop allocates from the same call sites in the same order every iteration,
  // so the traceback after span X is most often the one that followed X last time. The
  // guess is checked byte for byte (the bytes of a remembered span, then the APPENDS that
  // must end the run, at the same memo epoch), so a hit is exact, and it replaces the scan
  // for the run's end and its hash; a miss costs one memcmp that mostly stops early.
  // Returns the run's end and sets `stack`, or nullptr.
  const uint8_t* guess_span(const uint8_t* a, uint32_t& stack) {
    if (last_span_ == kNone32) return nullptr;
    uint32_t g = spans_[last_span_].next;
    if (g == kNone32) return nullptr;
    const Span& s = spans_[g];
    if (s.epoch != epoch_ || uint64_t(end_ - a) <= s.len || a[s.len] != 'e' ||
        std::memcmp(again(s.offset), a, s.len) != 0)
      return nullptr;
    stack = s.stack;
    last_span_ = g;
    return a + s.len;
  }
  // The slot of span_index_ that holds the span with these bytes (spans are unique by
  // bytes, whatever their epoch), or else the empty slot where it would go.
  size_t find_span(const uint8_t* a, uint64_t len, uint64_t h) const {
    size_t mask = span_index_.size() - 1, i = h & mask;
    for (; span_index_[i] != kNone32; i = (i + 1) & mask) {
      const Span& s = spans_[span_index_[i]];
      if (s.hash == h && s.len == len && std::memcmp(again(s.offset), a, len) == 0) break;
    }
    return i;
  }
  void followed_by(uint32_t k) {
    if (last_span_ != kNone32) spans_[last_span_].next = k;
    last_span_ = k;
  }
  // FRAME ops are rare (one per 64 KiB); the check for one is inline, the skip is not.
  void skip_frame_ops(const uint8_t*& q) {
    if (q < end_ && *q == 0x95) [[unlikely]]
      skip_frame_ops_slow(q);
  }
  void skip_frame_ops_slow(const uint8_t*& q);

  Device& device(int64_t index) {
    if (index < 0 || index > 65535) bail();
    auto [it, inserted] = devices_.try_emplace(index);
    if (inserted) it->second.index = static_cast<int>(index);
    return it->second;
  }
  TraceEvent make_event(const Slot* f, uint32_t seen);
  static Action action_of(const Slot& a);
  uint32_t frame_of(const Open& o);
  void push_segment(const Open& o);
  void push_settings(const Open& o);
  Snapshot renumber();
  void checkpoint();
  void account();

  const uint8_t* begin_;
  const uint8_t* back_;  // begin_, or the mapping with every byte when begin_ is a window
  // A window with no mapping behind it (compressed input): the bytes of every string and span, copied
  // when they are read (a few MiB: most strings and frames lists repeat by memo GET).
  bool keep_;
  std::vector<uint8_t> kept_;
  const uint8_t* p_;
  const uint8_t* end_;              // what has arrived
  const io::ByteSource* arriving_;  // more may arrive from here (nullptr: none)
  io::ReadAhead* window_;           // or from here, into a window (nullptr: none)
  Trace* last_trace_ = nullptr;     // the trace the last batch of events went to
  util::MemoryBudget* budget_;
  ProgressTicker ticker_;                      // the progress line: reported from account(), every MiB
  uint64_t next_account_ = uint64_t{1} << 20;  // input offset of the next memory check
  uint64_t next_release_ = 0;                  // of the next release of a window's bytes
  uint64_t next_check_ = 0;                    // the sooner of the two: checkpoint()
  int protocol_ = 0;
  std::vector<Slot> stack_;
  std::vector<uint32_t> marks_;
  std::vector<Open> opens_;
  std::vector<Slot> fields_;
  std::vector<Slot> atoms_;
  std::vector<std::pair<int64_t, int64_t>> tuples_;  // first two items of small int tuples
  Memo memo_;
  uint64_t memo_count_ = 0;
  uint32_t epoch_ = 0;
  bool used_memoize_ = false, used_put_ = false;

  std::vector<PendingBlock> pending_blocks_;
  std::vector<std::pair<uint64_t, uint64_t>> roundup_;
  std::vector<Staged> staged_;
  size_t live_staged_ = 0;
  // The keys events had at each place last time (the first kKeyOps, while each was a memo
  // GET): the GET's opcode and index as read, in the low bytes, and the key it named. A memo
  // entry is never replaced unless the file PUTs (then none is learnt), so the same bytes name
  // the same key, and an event of the usual layout reads its keys without a memo lookup.
  struct KeyOp {
    uint64_t bytes = ~uint64_t{0};
    uint8_t sym = Y_none;
  };
  static constexpr uint32_t kKeyOps = 8;
  KeyOp key_op_[kKeyOps];

  // Span cache: open addressing over seeded hashes.
  std::vector<uint32_t> span_index_ = std::vector<uint32_t>(1024, kNone32);
  std::vector<Span> spans_;
  uint32_t last_span_ = kNone32;  // the span of the last traceback read in place (guess_span)
  uint64_t seed_ = util::hash_seed();
  std::vector<FrameId> tmp_frames_;
  std::vector<Slot> tmp_items_;

  // Provisional tables (renumbered at the end) and the model being built.
  StringTable pstrings_;
  FrameTable pframes_;
  StackTable pstacks_;
  std::map<int64_t, Device> devices_;
  std::vector<std::pair<size_t, std::pair<int64_t, size_t>>> segment_order_;  // file index -> (device, index)
  Snapshot snap_;
  bool saw_root_ = false;
  uint64_t frame_end_ = 0;  // with a window: where the furthest FRAME read so far ends

  // ---- a split parse: the second half of the input on another thread (see SplitParse) ----
  struct Split;
  void plan_split(const SplitOptions& o);
  void maybe_split();
  bool event_at(const uint8_t* q) const;
  uint64_t find_start(const Split& sp) const;
  void take_tail();
  // The second half, at the end of a batch of its event list: another batch follows, or
  // the list is done and so is this half (the first half goes on from here).
  void end_of_batch() {
    const uint8_t* q = p_;
    skip_frame_ops(q);
    if (q < end_ && *q == '(') return;
    tail_end_ = off(p_);
    throw TailStop{};
  }
  std::unique_ptr<Split> split_;               // the first half: the plan, then the running second half
  uint64_t split_stop_ = UINT64_MAX;           // the first half: where the second half began
  uint64_t split_try_ = UINT64_MAX;            // the first half: where it next tries to start the second
  uint64_t split_step_ = 0;                    // SplitOptions::step
  bool split_wait_ = false;                    // SplitOptions::wait
  uint64_t split_events_at_ = 0;               // the first half: where it first had an event
  bool tail_ = false;                          // this is the second half
  uint32_t own_frame_bit_ = 0;                 // the second half: its own frames' provisional ids carry it
  const std::atomic<bool>* cancel_ = nullptr;  // the second half: the first half gave up
  uint64_t tail_end_ = 0;                      // the second half: the opcode it stopped before
  bool split_taken_ = false;                   // the first half: it took the second half's work
  // 8 bytes: a file's events make ~1 in 3 of them (each free's traceback), and as a vector
  // of 24-byte records their growth was 2,000 of the second half's page faults (114 MB file).
  struct Deferred {
    static constexpr uint32_t kStackUse = 1u << 31, kCount = kStackUse - 1;
    uint32_t idx;  // the GET's memo index
    uint32_t use;  // this half's memo count then (kCount bits), and how it was taken
    uint64_t count() const { return use & kCount; }
    bool stack() const { return use & kStackUse; }
  };
  util::PodBuffer<Deferred> deferred_;     // the second half: GETs it could not resolve
  std::vector<Deferred> deferred_frames_;  // the second half: frames it took by memo index
};

// ---- container creation: which parent, which role -----------------------------------------

void FastBuilder::open_container(CKind k) {
  size_t n = stack_.size();
  uint32_t parent = kNone32, pos = 0;
  uint8_t key = Y_none;
  Role role = R_bail;
  // Where the new container goes is decided before its parent takes it, so it is a guess,
  // checked again in consume(). (b) APPEND form first: a list of one element (one frame,
  // one block, one segment) is common, and an open list right below that could not hold
  // this kind of container is skipped. Then (a) a MARK batch, then (b) SETITEM form.
  size_t m = fence();
  bool have_mark = !marks_.empty();
  if (n >= 1 && stack_[n - 1].tag == kOpen && (!have_mark || m <= n - 1)) {
    const Open& o = opens_[stack_[n - 1].a];
    if (o.kind == C_list) {
      Role r = child_role(o.role, C_list, Y_none, k);
      if (r != R_bail) role = r, parent = stack_[n - 1].a, pos = o.count;
    }
  }
  // (a) inside a MARK batch: the parent is right below the MARK.
  if (role == R_bail && have_mark && m >= 1 && stack_[m - 1].tag == kOpen) {
    const Open& o = opens_[stack_[m - 1].a];
    if (o.kind == C_list) {
      role = child_role(o.role, C_list, Y_none, k);
      parent = stack_[m - 1].a;
      pos = o.count + uint32_t(n - m);
    } else if ((n - m) % 2 == 1) {
      const Slot& ks = stack_[n - 1];
      key = ks.tag == kStr ? ks.sym : uint8_t(Y_none);
      role = ks.tag == kStr ? child_role(o.role, C_dict, key, k) : (o.role == R_ignore ? R_ignore : R_bail);
      parent = stack_[m - 1].a;
    }
  }
  // (b) SETITEM form, last: a dict with one key is rare, a completed sibling dict is not.
  if (role == R_bail && n >= 2 && stack_[n - 2].tag == kOpen && stack_[n - 1].tag < kOpen &&
      (!have_mark || m <= n - 2)) {
    const Open& o = opens_[stack_[n - 2].a];
    if (o.kind == C_dict) {
      uint8_t kk = stack_[n - 1].tag == kStr ? stack_[n - 1].sym : uint8_t(Y_none);
      Role r = stack_[n - 1].tag == kStr ? child_role(o.role, C_dict, kk, k) : (o.role == R_ignore ? R_ignore : R_bail);
      if (r != R_bail) role = r, parent = stack_[n - 2].a, key = kk;
    }
  }
  if (role == R_bail) {
    if (!opens_.empty() || saw_root_) bail();
    role = k == C_dict ? R_top : R_segments;  // the root: a dict, or the list form
    saw_root_ = true;
  }
  if (role == R_bail) bail();
  if (opens_.size() >= 100000) bail();
  Open o;
  o.role = role;
  o.kind = k;
  o.key = key;
  o.parent = parent;
  o.pos = pos;
  int nf = k == C_dict ? field_count(role) : 0;
  o.fields = static_cast<uint32_t>(fields_.size());
  fields_.resize(fields_.size() + size_t(nf));
  if (role == R_blocks) o.value = static_cast<uint32_t>(pending_blocks_.size());
  if (role == R_roundup) o.value = static_cast<uint32_t>(roundup_.size());
  if (role == R_trace) {
    o.value = pos;
    device(pos);  // the generic builder makes a device for every trace list, even an empty one
  }
  opens_.push_back(o);
  Slot s;
  s.tag = kOpen;
  s.a = static_cast<uint32_t>(opens_.size() - 1);
  push(s);
}

// ---- finishing containers when their parent takes them ---------------------------------------

// The result of an open container, computed when its parent consumes it. Does not pop the
// record: consume() drops the consumed records (always the newest ones) as a block.
Slot FastBuilder::finish(uint32_t rec) {
  const Open& o = opens_[rec];
  Slot out;
  out.tag = kDone;
  const Slot* f = fields_.data() + o.fields;
  auto has = [&](int k) { return (o.seen >> k) & 1u; };
  switch (o.role) {
    case R_frame:
      out.tag = kFrame;
      out.a = o.count ? o.value : frame_of(o);
      break;
    case R_frames:
      out.tag = kStack;
      out.a = o.value;
      break;
    case R_blocks:
      out.tag = kBlocks;
      out.a = o.value;
      out.b = pending_blocks_.size();
      break;
    case R_roundup:
      out.tag = kRoundup;
      out.a = o.value;
      out.b = roundup_.size();
      break;
    case R_segment: push_segment(o); break;
    case R_settings: push_settings(o); break;
    case R_block: {
      PendingBlock pb{};
      if (!has(F_blk_size) || !has(F_blk_state)) bail();
      Block& b = pb.block;
      b.size = size_of(f[F_blk_size]);
      const Slot& st = f[F_blk_state];
      if (st.tag != kStr) bail();
      switch (st.sym) {
        case Y_active_allocated: b.state = BlockState::ActiveAllocated; break;
        case Y_active_pending_free:
        case Y_active_awaiting_free: b.state = BlockState::ActivePendingFree; break;
        case Y_inactive: b.state = BlockState::Inactive; break;
        default: bail();
      }
      pb.has_address = has(F_blk_address);
      if (pb.has_address) b.address = bits_of(f[F_blk_address]);
      if (has(F_blk_requested)) {
        b.requested_size = size_of(f[F_blk_requested]);
        b.requested_known = true;
      }
      if (has(F_blk_frames) && b.is_active()) b.stack = StackId{stack_of(f[F_blk_frames])};
      pending_blocks_.push_back(pb);
      break;
    }
    case R_event: device(opens_[o.parent].value).trace.push_back(make_event(f, o.seen)); break;
    case R_annot: {
      Annotation a;
      auto is_int = [](const Slot& x) { return x.tag == kInt || x.tag == kUInt; };
      if (has(F_ann_device) && is_int(f[F_ann_device])) a.device = static_cast<int>(int64_t(f[F_ann_device].b));
      if (has(F_ann_time) && is_int(f[F_ann_time])) a.time_us = int64_t(f[F_ann_time].b);
      if (has(F_ann_name) && f[F_ann_name].tag == kStr) a.name = pstrings_.intern(str(f[F_ann_name]));
      if (has(F_ann_stage) && f[F_ann_stage].tag == kStr) a.stage = pstrings_.intern(str(f[F_ann_stage]));
      snap_.annotations.push_back(a);
      break;
    }
    case R_top:
      if (!has(F_top_segments)) bail();
      break;
    case R_trace:
    case R_segments:
    case R_devtraces:
    case R_annotations:
    case R_ignore: break;
    default: bail();
  }
  if (o.memo != kNone32) {
    uint32_t h = out.tag == kFrame ? (Memo::kFrame | out.a) : out.tag == kStack ? (Memo::kStack | out.a) : 0;
    if (memo_.put(o.memo, h)) ++epoch_;
  }
  return out;
}

uint32_t FastBuilder::frame_of(const Open& o) {
  const Slot* f = fields_.data() + o.fields;
  auto has = [&](int k) { return (o.seen >> k) & 1u; };
  Frame fr;
  if (has(F_fr_filename)) fr.filename = pstrings_.intern(str_of(f[F_fr_filename]));
  if (has(F_fr_name)) fr.name = pstrings_.intern(str_of(f[F_fr_name]));
  if (has(F_fr_line)) fr.line = int_of(f[F_fr_line]);
  uint32_t id = pframes_.intern(fr).v;
  if (id & own_frame_bit_) bail();  // the second half of a split parse: its ids would run into the mark
  return id | own_frame_bit_;
}

Action FastBuilder::action_of(const Slot& a) {
  if (a.tag != kStr) bail();
  switch (a.sym) {
    case Y_alloc: return Action::Alloc;
    case Y_free_requested: return Action::FreeRequested;
    case Y_free_completed: return Action::FreeCompleted;
    case Y_segment_alloc: return Action::SegmentAlloc;
    case Y_segment_free: return Action::SegmentFree;
    case Y_segment_map: return Action::SegmentMap;
    case Y_segment_unmap: return Action::SegmentUnmap;
    case Y_snapshot: return Action::Snapshot;
    case Y_oom: return Action::Oom;
    case Y_free: return Action::Free;
    default: bail();  // unknown actions become warnings: the generic path words them
  }
}

TraceEvent FastBuilder::make_event(const Slot* f, uint32_t seen) {
  if (!(seen & (1u << F_ev_action))) bail();
  TraceEvent e;
  e.action = action_of(f[F_ev_action]);
  if (seen & (1u << F_ev_addr)) e.addr = bits_of(f[F_ev_addr]);
  if (seen & (1u << F_ev_size)) e.size = size_of(f[F_ev_size]);
  if (seen & (1u << F_ev_stream)) e.stream = bits_of(f[F_ev_stream]);
  if (seen & (1u << F_ev_time)) e.time_us = int_of(f[F_ev_time]);
  if (seen & (1u << F_ev_frames)) e.stack = StackId{stack_of(f[F_ev_frames])};
  if (e.action == Action::Oom) e.addr = (seen & (1u << F_ev_device_free)) ? size_of(f[F_ev_device_free]) : 0;
  return e;
}

void FastBuilder::push_segment(const Open& o) {
  const Slot* f = fields_.data() + o.fields;
  auto has = [&](int k) { return (o.seen >> k) & 1u; };
  int64_t dev = has(F_seg_device) ? int_of(f[F_seg_device]) : 0;
  Device& d = device(dev);
  if (!has(F_seg_blocks) || !has(F_seg_total)) bail();
  Segment s;
  s.file_index = o.pos;
  s.total_size = size_of(f[F_seg_total]);
  if (has(F_seg_address)) s.address = bits_of(f[F_seg_address]);
  if (has(F_seg_stream)) s.stream = bits_of(f[F_seg_stream]);
  if (has(F_seg_type)) {
    std::string_view t = str_of(f[F_seg_type]);
    s.pool = t == "small" ? Pool::Small : t == "large" ? Pool::Large : Pool::Unknown;
  }
  if (has(F_seg_pool)) {
    const Slot& t = f[F_seg_pool];
    if (t.tag != kTuple || t.sym == 0) bail();
    if (t.a >= 1) s.pool_id[0] = tuples_[t.b].first;
    if (t.a >= 2) s.pool_id[1] = tuples_[t.b].second;
  }
  if (has(F_seg_expandable)) s.expandable = bool_of(f[F_seg_expandable]);
  if (has(F_seg_frames)) s.stack = StackId{stack_of(f[F_seg_frames])};
  if (has(F_seg_allocated)) s.stated_allocated = size_of(f[F_seg_allocated]);
  if (has(F_seg_active)) s.stated_active = size_of(f[F_seg_active]);
  if (has(F_seg_requested)) s.stated_requested = size_of(f[F_seg_requested]);
  const Slot& bl = f[F_seg_blocks];
  if (bl.tag != kBlocks) bail();
  size_t nb = size_t(bl.b - bl.a);
  if (d.blocks.size() + nb > 0xFFFFFFFFu) bail();
  s.first_block = static_cast<uint32_t>(d.blocks.size());
  s.block_count = static_cast<uint32_t>(nb);
  uint64_t cursor = s.address;
  for (size_t i = bl.a; i < bl.b; ++i) {
    Block b = pending_blocks_[i].block;
    if (!pending_blocks_[i].has_address) {
      b.address = cursor;
      b.address_derived = true;
    }
    cursor = b.address + b.size;
    if (!b.requested_known) b.requested_size = b.size;
    d.blocks.push_back(b);
  }
  segment_order_.push_back({o.pos, {dev, d.segments.size()}});
  d.segments.push_back(s);
}

void FastBuilder::push_settings(const Open& o) {
  const Slot* f = fields_.data() + o.fields;
  auto has = [&](int k) { return (o.seen >> k) & 1u; };
  AllocatorSettings& s = snap_.settings;
  s.present = true;
  if (has(F_set_conf)) s.alloc_conf = std::string(str_of(f[F_set_conf]));
  if (has(F_set_max_split)) {
    const Slot& m = f[F_set_max_split];
    if (m.tag == kInt && int64_t(m.b) > 0 && int64_t(m.b) < (int64_t{1} << 62))
      s.max_split_size = m.b;
    else if (m.tag != kInt && m.tag != kUInt && m.tag != kBig)
      bail();
  }
  if (has(F_set_gc)) {
    const Slot& m = f[F_set_gc];
    if (m.tag == kFloat) {
      double d;
      std::memcpy(&d, &m.b, 8);
      if (!std::isfinite(d)) bail();  // the general path names it
      s.garbage_collection_threshold = d;
    } else {
      s.garbage_collection_threshold = double(int_of(m));
    }
  }
  if (has(F_set_expandable)) s.expandable_segments = bool_of(f[F_set_expandable]);
  if (has(F_set_overflowed)) s.trace_alloc_overflowed = bool_of(f[F_set_overflowed]);
  if (has(F_set_max_entries)) s.trace_alloc_max_entries = int_of(f[F_set_max_entries]);
  if (has(F_set_roundup) && f[F_set_roundup].tag == kRoundup)
    for (size_t i = f[F_set_roundup].a; i < f[F_set_roundup].b; ++i) s.roundup_power2_divisions.push_back(roundup_[i]);
}

// Items [items, items+n) join container `rec` (list elements, or dict key/value pairs).
// Each open item is checked against the parent and key/position it was created for and
// finished in order; the consumed records are the newest ones and are dropped together.
void FastBuilder::consume(uint32_t rec, const Slot* items, size_t n) {
  Open& parent = opens_[rec];
  Role role = parent.role;
  bool dict = parent.kind == C_dict;
  if (dict && n % 2) bail();
  uint32_t base = parent.count;
  if (uint64_t(base) + n > 0xFFFFFFF0u) bail();
  tmp_items_.assign(items, items + n);
  std::vector<Slot>& it = tmp_items_;
  uint32_t next_rec = kNone32;  // the open records consumed must be consecutive and the newest
  for (size_t i = 0; i < n; ++i) {
    if (it[i].tag != kOpen) continue;
    const Open& c = opens_[it[i].a];
    if (next_rec == kNone32) next_rec = it[i].a;
    if (it[i].a != next_rec++ || c.parent != rec) {
      bail();
    }
    if (dict) {
      if (i % 2 == 0) bail();  // a container as a key
      uint8_t key = it[i - 1].tag == kStr ? it[i - 1].sym : uint8_t(Y_none);
      Role want =
          it[i - 1].tag == kStr ? child_role(role, C_dict, key, c.kind) : (role == R_ignore ? R_ignore : R_bail);
      if (c.key != key || c.role != want) bail();
    } else {
      if (c.pos != base + i || child_role(role, C_list, Y_none, c.kind) != c.role) bail();
    }
  }
  uint32_t first_rec = kNone32;
  if (next_rec != kNone32) {
    for (size_t i = 0; i < n && first_rec == kNone32; ++i)
      if (it[i].tag == kOpen) first_rec = it[i].a;
    if (next_rec != opens_.size()) bail();
  }
  if (dict) {
    for (size_t i = 0; i < n; i += 2) {
      const Slot& k = it[i];
      if (k.tag >= kOpen) bail();
      bool was_open = it[i + 1].tag == kOpen;
      Slot v = was_open ? finish(it[i + 1].a) : it[i + 1];
      if (v.tag == kEvent) bail();
      Open& p = opens_[rec];
      if (role == R_roundup) {
        if (k.tag == kStr && (v.tag == kInt || v.tag == kUInt)) {
          std::string key(str(k));
          char* end = nullptr;
          unsigned long long bucket = std::strtoull(key.c_str(), &end, 10);
          if (end != key.c_str() && *end == '\0') roundup_.emplace_back(bucket, v.b);
        }
        continue;
      }
      if (k.tag != kStr) continue;
      int fld = field_of(role, k.sym);
      if (fld == kNoField) continue;
      if (p.seen & (1u << fld)) bail();  // a repeated key: the generic path keeps the last
      if (role == R_top && !was_open) bail();
      p.seen |= 1u << fld;
      fields_[p.fields + uint32_t(fld)] = v;
    }
  } else {
    switch (role) {
      case R_frames: {
        if (opens_[rec].read) bail();
        tmp_frames_.clear();
        for (size_t i = 0; i < n; ++i) {
          Slot v = it[i].tag == kOpen ? finish(it[i].a) : it[i];
          if (v.tag == kDeferred) [[unlikely]] {  // a frame the second half of a split parse does not know
            const Deferred& d = deferred_[v.a & ~kDeferredStack];
            tmp_frames_.push_back(deferred_frame(d.idx, d.count()));
            continue;
          }
          if (v.tag != kFrame) bail();
          tmp_frames_.push_back(FrameId{v.a});
        }
        opens_[rec].value = extend_stack(opens_[rec].value, tmp_frames_);
        break;
      }
      case R_segments:
      case R_blocks:
      case R_annotations:
      case R_devtraces:
        for (size_t i = 0; i < n; ++i) {
          if (it[i].tag == kOpen) {
            finish(it[i].a);
          } else if (role == R_annotations && it[i].tag < kOpen) {
            // not a dict: skipped, as the generic builder does
          } else if (role == R_devtraces && it[i].tag == kNone) {
            // None for an unused device: skipped, as the generic builder does
          } else {
            bail();
          }
        }
        break;
      case R_trace: {
        Trace& trace = device(opens_[rec].value).trace;  // one lookup per batch, not per event
        // Another device's trace is done (traces come one after the other): the pages its
        // columns were given ahead go back before this one's grow (the no-frames
        // benchmark file's peak went from 56 to 44 MiB).
        if (last_trace_ && last_trace_ != &trace) last_trace_->trim();
        last_trace_ = &trace;
        for (size_t i = 0; i < n; ++i) {
          if (it[i].tag == kOpen) {
            finish(it[i].a);
          } else if (it[i].tag == kEvent) {
            const Staged& st = staged_[it[i].a];
            if (st.parent != rec) bail();
            trace.push_back(st.e);
            --live_staged_;
          } else {
            bail();
          }
        }
        if (live_staged_ == 0) staged_.clear();
        break;
      }
      case R_ignore:
        for (size_t i = 0; i < n; ++i) {
          if (it[i].tag == kOpen)
            finish(it[i].a);
          else if (it[i].tag == kEvent || it[i].tag == kBlocks || it[i].tag == kRoundup)
            bail();
        }
        break;
      default: bail();
    }
  }
  if (first_rec != kNone32) {
    fields_.resize(opens_[first_rec].fields);
    opens_.resize(first_rec);
  }
  if (role == R_frame) {
    // A frame dict is complete after its one SETITEMS: intern it now, so that a memo GET
    // of it before its list takes it (the same frame twice in one traceback) finds it.
    Open& o = opens_[rec];
    if (o.count) bail();  // items added later would change a frame already handed out
    o.value = frame_of(o);
    if (o.memo != kNone32 && memo_.put(o.memo, Memo::kFrame | o.value)) ++epoch_;
    o.count = 1;
    return;
  }
  opens_[rec].count = base + static_cast<uint32_t>(n);
  if (role == R_segments) {
    bool open_segment = false;
    for (const Open& o : opens_) open_segment |= o.role == R_segment;
    if (!open_segment) pending_blocks_.clear();
  }
}

void FastBuilder::make_tuple(const Slot* items, size_t n) {
  Slot t;
  t.tag = kTuple;
  t.a = static_cast<uint32_t>(n);
  bool ints = true;
  int64_t v[2] = {0, 0};
  for (size_t i = 0; i < n; ++i) {
    if (items[i].tag >= kOpen) bail();
    if (i < 2) {
      if (items[i].tag == kInt)
        v[i] = int64_t(items[i].b);
      else
        ints = false;
    }
  }
  t.sym = ints ? 1 : 0;
  t.b = tuples_.size();
  tuples_.emplace_back(v[0], v[1]);
  stack_.resize(stack_.size() - n);
  push(t);
}

// ---- stacks ---------------------------------------------------------------------------------

uint32_t FastBuilder::extend_stack(uint32_t base, std::span<const FrameId> more) {
  if (more.empty()) return base;
  if (base == 0) return pstacks_.intern(more).v;
  std::vector<FrameId> all(pstacks_[StackId{base}].begin(), pstacks_[StackId{base}].end());
  all.insert(all.end(), more.begin(), more.end());
  return pstacks_.intern(all).v;
}

uint32_t FastBuilder::decode_span(const uint8_t* a, const uint8_t* b) {
  tmp_frames_.clear();
  for (const uint8_t* q = a; q < b;) {
    uint32_t idx;
    if (*q == 'h') {
      idx = q[1];
      q += 2;
    } else {
      std::memcpy(&idx, q + 1, 4);
      q += 5;
    }
    uint32_t h = memo_.get(idx);
    if (tail_ && h == 0) [[unlikely]] {
      tmp_frames_.push_back(deferred_frame(idx, memo_count_));
      continue;
    }
    if ((h & ~Memo::kPayload) != Memo::kFrame) bail();
    tmp_frames_.push_back(FrameId{h & Memo::kPayload});
  }
  return pstacks_.intern(tmp_frames_).v;
}

}  // namespace

// The end of a run of BINGET ('h' + 1 byte) and LONG_BINGET ('j' + 4 bytes) ops from q.
// Each op's length depends on its opcode, so a plain scan is one load-compare-add chain
// per op: perf put that scan at 14% of a 1 GB analyze, as the first reader of every
// traceback. With SSE2, 32 bytes at a time become two bit masks (where 'h' is, where 'j'
// is). A run of one kind (frame dicts memoized early are BINGETs, later ones LONG_BINGETs)
// is then one mask test for 16 or 7 ops; a mixed stretch walks the masks in registers
// instead of loading byte by byte. The last few bytes, and builds without SSE2, take the
// scalar scan, which checks four ops of one kind at a time from independent loads.
//
// The loads here were the rest of that 14%: this is the first read of most of the input,
// and a mapped file's page cache comes in 4 KiB pages, at whose ends the hardware
// prefetcher stops. So each call also asks for the three cache lines a page ahead (a
// traceback is about two lines; a prefetch never faults, past the end either). Paired
// bench_load runs on the 1 GB input: 1.86 s before, 1.70 s with the masks, 1.55 s with
// the prefetch; asking for each line once from try_event instead measured no gain.
const uint8_t* skip_memo_gets(const uint8_t* q, const uint8_t* end) {
  for (uintptr_t ahead : {4096, 4096 + 64, 4096 + 128})  // as integers: may point past the input
    __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(q) + ahead));
#if defined(__SSE2__)
  constexpr uint32_t kEvery2 = 0x55555555u;  // op starts of 16 'h' ops
  constexpr uint32_t kEvery5 = 0x42108421u;  // op starts of 7 'j' ops
  while (end - q >= 37) {                    // a 'j' at offset 31 still ends inside the input
    __m128i lo = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q));
    __m128i hi = _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 16));
    const __m128i h = _mm_set1_epi8('h'), j = _mm_set1_epi8('j');
    uint32_t mh =
        uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(lo, h))) | uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(hi, h))) << 16;
    if ((mh & kEvery2) == kEvery2) {
      q += 32;
      continue;
    }
    uint32_t mj =
        uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(lo, j))) | uint32_t(_mm_movemask_epi8(_mm_cmpeq_epi8(hi, j))) << 16;
    if ((mj & kEvery5) == kEvery5) {
      q += 35;
      continue;
    }
    unsigned pos = 0;
    while (pos < 32) {
      if ((mh >> pos) & 1)
        pos += 2;
      else if ((mj >> pos) & 1)
        pos += 5;
      else
        return q + pos;
    }
    q += pos;
  }
#endif
  for (;;) {
    while (end - q >= 21) {
      if (q[0] == 'h' && q[2] == 'h' && q[4] == 'h' && q[6] == 'h')
        q += 8;
      else if (q[0] == 'j' && q[5] == 'j' && q[10] == 'j' && q[15] == 'j')
        q += 20;
      else
        break;
    }
    ptrdiff_t left = end - q;
    if (left >= 5 && *q == 'j')
      q += 5;
    else if (left >= 2 && *q == 'h')
      q += 2;
    else
      return q;
  }
}

namespace {

// At "(" right after an open frames list: a run of memo GETs up to APPENDS is looked up by
// its bytes. Returns false (nothing consumed) when the batch holds anything else.
bool FastBuilder::try_frames_span(uint32_t rec) {
  const uint8_t* a = p_;
  const uint8_t* q = skip_memo_gets(a, end_);
  if (q >= end_ || *q != 'e') return false;
  const uint8_t* b = q;
  uint64_t len = uint64_t(b - a);
  uint32_t stack = 0;
  if (len > 0) {
    uint64_t h = util::hash_bytes(a, len, seed_);
    size_t i = find_span(a, len, h);
    if (span_index_[i] != kNone32) {
      Span& s = spans_[span_index_[i]];
      if (s.epoch != epoch_) {  // same bytes, but a memo entry changed since: decode again
        s.stack = decode_span(a, b);
        s.epoch = epoch_;
      }
      stack = s.stack;
    } else {
      stack = decode_span(a, b);
      if (spans_.size() >= 0xFFFFFFF0u) bail();
      spans_.push_back(Span{h, keep_ ? keep(a, len) : off(a), static_cast<uint32_t>(len), stack, epoch_});
      span_index_[i] = static_cast<uint32_t>(spans_.size() - 1);
      if (spans_.size() * 2 > span_index_.size()) {
        std::vector<uint32_t> grown(span_index_.size() * 2, kNone32);
        size_t gm = grown.size() - 1;
        for (uint32_t k = 0; k < spans_.size(); ++k) {
          size_t j = spans_[k].hash & gm;
          while (grown[j] != kNone32) j = (j + 1) & gm;
          grown[j] = k;
        }
        span_index_.swap(grown);
      }
    }
  }
  Open& o = opens_[rec];
  if (o.read) bail();
  size_t frames = pstacks_[StackId{stack}].size();
  if (o.value == 0) {
    o.value = stack;
  } else {
    auto more = pstacks_[StackId{stack}];
    std::vector<FrameId> copy(more.begin(), more.end());
    o.value = extend_stack(o.value, copy);
  }
  o.count += static_cast<uint32_t>(frames);
  p_ = b + 1;
  return true;
}

void FastBuilder::skip_frame_ops_slow(const uint8_t*& q) {
  while (q < end_ && *q == 0x95) {
    if (end_ - q < 9 && !more(q, 9)) bail();
    uint64_t n;
    std::memcpy(&n, q + 1, 8);
    q += 9;
    if (!frame_fits(q, n)) bail();
  }
}

// The fixed-layout decoder for a trace event dict: `open`, called right after its EMPTY_DICT
// with the dict's open record the newest; else at the EMPTY_DICT, with none (more_events).
// On success the record (or nothing) is replaced by a staged event; on any surprise nothing
// has changed but what it learnt of the keys (key_op_, which holds only facts of the memo),
// and the general path carries on.
bool FastBuilder::try_event(uint32_t parent_rec, bool open) {
  const uint8_t* q = open ? p_ : p_ + 1;  // without an open record, p_ is at the EMPTY_DICT
  uint64_t count = memo_count_;
  struct PendingPut {
    uint64_t idx;
    uint32_t handle;
  } puts[8];
  int nputs = 0;
  auto lookup = [&](uint64_t idx, uint32_t& h) {
    if (idx >= memo_.limit()) return false;  // the second half of a split parse: unknown
    for (int k = nputs; k-- > 0;)
      if (puts[k].idx == idx) return h = puts[k].handle, true;
    h = memo_.get(idx);
    return h != 0;
  };
  auto memoize = [&](uint32_t handle) {
    if (nputs == 8 || used_put_) return false;
    puts[nputs++] = {count++, handle};
    return true;
  };
  auto atom = [&](const Slot& s) -> uint32_t {
    if (atoms_.size() > Memo::kPayload) bail();
    atoms_.push_back(s);
    return Memo::kAtom | uint32_t(atoms_.size() - 1);
  };
  skip_frame_ops(q);
  if (q < end_ && *q == 0x94) {  // the dict's own MEMOIZE
    if (used_put_) return false;
    ++count;
    ++q;
  }
  skip_frame_ops(q);
  if (q >= end_ || *q != '(') return false;
  ++q;
  // The event's fields as make_event() would give them, each converted as it is read; the
  // action, traceback and device_free slots are kept for the end, where make_event reads
  // them. (All fields as a Slot[], then make_event, cost a 16-byte store and load of each
  // field: 147 against 133 ms for a one-thread load of the no-frames benchmark file.)
  TraceEvent ev;
  Slot action, frames, device_free;
  uint32_t seen = 0;
  uint32_t nkeys = 0;  // keys read so far, while all were GETs (see key_op_)
  auto get_slot = [&](uint32_t h, Slot& out) {
    switch (h & ~Memo::kPayload) {
      case Memo::kAtom: out = atoms_[h & Memo::kPayload]; return true;
      case Memo::kStack:
        out.tag = kStack;
        out.a = h & Memo::kPayload;
        return true;
      default: return false;
    }
  };
  for (;;) {
    skip_frame_ops(q);
    if (end_ - q < 16) return false;
    uint8_t c = *q++;
    if (c == 'u') break;
    // key
    Slot key;
    uint32_t h;
    if ((c == 'h' || c == 'j') && nkeys < kKeyOps && !used_put_) {
      size_t len = c == 'h' ? 1 : 4;
      uint64_t bytes;
      std::memcpy(&bytes, q - 1, 8);
      bytes &= len == 1 ? 0xFFFF : 0xFFFFFFFFFF;
      KeyOp& k = key_op_[nkeys++];
      if (k.bytes == bytes) {  // the key at this place last time
        key.tag = kStr;
        key.sym = k.sym;
      } else {
        uint32_t idx = 0;
        std::memcpy(&idx, q, len);
        if (!lookup(idx, h) || !get_slot(h, key)) return false;
        if (key.tag == kStr) k = KeyOp{bytes, key.sym};
      }
      q += len;
    } else if (c == 'h') {
      if (!lookup(*q++, h) || !get_slot(h, key)) return false;
    } else if (c == 'j') {
      uint32_t idx;
      std::memcpy(&idx, q, 4);
      q += 4;
      if (!lookup(idx, h) || !get_slot(h, key)) return false;
    } else if (c == 0x8c) {
      nkeys = kKeyOps;
      uint8_t n = *q++;
      if (uint64_t(end_ - q) < uint64_t(n) + 16) return false;
      key = str_slot(q, n);
      q += n;
      if (*q == 0x94) {
        if (!memoize(atom(key))) return false;
        ++q;
      }
    } else {
      return false;
    }
    if (key.tag != kStr) return false;
    // value
    skip_frame_ops(q);
    if (end_ - q < 16) return false;
    int fld = field_of(R_event, key.sym);
    // The integer fields in the opcodes they come in (BININT1, BININT2, BININT, LONG1 of up to
    // 8 bytes), converted at once: in the one switch below, the opcode's dispatch was a fifth
    // of try_event's samples (perf).
    if (fld == F_ev_addr || fld == F_ev_size || fld == F_ev_stream || fld == F_ev_time) {
      Slot v;
      if (uint8_t n = int_op(q, v)) {
        if (seen & (1u << fld)) return false;
        seen |= 1u << fld;
        q += n;
        // The four integer cases of the switch at the loop's end, on their own: one lambda
        // for both places measured 5% slower (a one-thread load of the no-frames file, 120
        // against 115 ms), as this switch then dispatches over all seven fields.
        switch (fld) {
          case F_ev_addr: ev.addr = bits_of(v); break;
          case F_ev_size: ev.size = size_of(v); break;
          case F_ev_stream: ev.stream = bits_of(v); break;
          default: ev.time_us = int_of(v); break;  // F_ev_time
        }
        continue;
      }
    }
    Slot v;
    c = *q++;
    switch (c) {
      case 'h':
      case 'j': {
        uint32_t idx;
        if (c == 'h') {
          idx = *q++;
        } else {
          std::memcpy(&idx, q, 4);
          q += 4;
        }
        if (!lookup(idx, h) || !get_slot(h, v)) {
          if (!tail_ || key.sym != Y_frames) return false;
          v = defer(idx, count);  // another event's traceback, memoized where this half cannot see
        }
        break;
      }
      case 'K': v = int_slot(*q++); break;
      case 'M': {
        uint16_t x;
        std::memcpy(&x, q, 2);
        q += 2;
        v = int_slot(x);
        break;
      }
      case 'J': {
        int32_t x;
        std::memcpy(&x, q, 4);
        q += 4;
        v = int_slot(x);
        break;
      }
      case 0x8a: {
        uint8_t n = *q++;
        if (uint64_t(end_ - q) < uint64_t(n) + 16) return false;
        v = long_slot(q, n);
        q += n;
        break;
      }
      case 'N': v.tag = kNone; break;
      case 0x88:
        v.tag = kBool;
        v.b = 1;
        break;
      case 0x89:
        v.tag = kBool;
        v.b = 0;
        break;
      case 0x8c: {
        uint8_t n = *q++;
        if (uint64_t(end_ - q) < uint64_t(n) + 16) return false;
        v = str_slot(q, n);
        q += n;
        if (*q == 0x94) {
          if (!memoize(atom(v))) return false;
          ++q;
        }
        break;
      }
      case ']': {  // a frames list written in place
        if (key.sym != Y_frames) return false;
        bool memoized = false;
        uint64_t list_idx = 0;
        if (*q == 0x94) {
          memoized = true;
          list_idx = count;
          if (nputs == 8 || used_put_) return false;
          ++count;
          ++q;
        }
        uint32_t stack = 0;
        if (*q == '(') {
          // reuse the span path: it needs p_ and an open frames list, so decode directly
          const uint8_t* a = q + 1;
          const uint8_t* e = guess_span(a, stack);
          if (e == nullptr) {
            e = skip_memo_gets(a, end_);
            if (e >= end_ || *e != 'e') return false;
            uint64_t len = uint64_t(e - a);
            if (len > 0) {
              uint32_t k = span_index_[find_span(a, len, util::hash_bytes(a, len, seed_))];
              // First sight, or a memo entry changed since: the general path decodes it.
              if (k == kNone32 || spans_[k].epoch != epoch_) return false;
              stack = spans_[k].stack;
              followed_by(k);
            }
          }
          q = e + 1;
        } else if (*q == 'h' || *q == 'j') {
          uint32_t idx;
          const uint8_t* r = q;
          if (*r == 'h') {
            idx = r[1];
            r += 2;
          } else {
            std::memcpy(&idx, r + 1, 4);
            r += 5;
          }
          if (*r != 'a' || !lookup(idx, h) || (h & ~Memo::kPayload) != Memo::kFrame) return false;
          FrameId one{h & Memo::kPayload};
          stack = pstacks_.intern(std::span<const FrameId>(&one, 1)).v;
          q = r + 1;
        }
        if (memoized) puts[nputs++] = {list_idx, Memo::kStack | stack};
        v.tag = kStack;
        v.a = stack;
        break;
      }
      default: return false;
    }
    if (fld == kNoField) continue;
    if (seen & (1u << fld)) return false;
    seen |= 1u << fld;
    switch (fld) {
      case F_ev_action: action = v; break;
      case F_ev_addr: ev.addr = bits_of(v); break;
      case F_ev_size: ev.size = size_of(v); break;
      case F_ev_stream: ev.stream = bits_of(v); break;
      case F_ev_time: ev.time_us = int_of(v); break;
      case F_ev_frames: frames = v; break;
      default: device_free = v; break;  // F_ev_device_free
    }
  }
  // What make_event() does after the fields (any surprise bails, as there).
  if (!(seen & (1u << F_ev_action))) bail();
  ev.action = action_of(action);
  if (seen & (1u << F_ev_frames)) ev.stack = StackId{stack_of(frames)};
  if (ev.action == Action::Oom) ev.addr = (seen & (1u << F_ev_device_free)) ? size_of(device_free) : 0;
  // Commit: memo writes, the staged event in place of the open dict.
  if (nputs || count != memo_count_) used_memoize_ = true;
  for (int k = 0; k < nputs; ++k)
    if (memo_.put(puts[k].idx, puts[k].handle)) ++epoch_;
  memo_count_ = count;
  staged_.push_back(Staged{ev, parent_rec});
  ++live_staged_;
  if (open) {
    fields_.resize(opens_.back().fields);
    opens_.pop_back();
  } else {
    if (stack_.size() >= (size_t{1} << 22)) bail();
    stack_.emplace_back();
  }
  // Written in place: a Slot made on the side and copied in whole by push() stalled on its
  // 16-byte load of the smaller stores just made (perf: 80% of push()'s samples, 5.7% of
  // the run).
  Slot& s = stack_.back();
  s.tag = kEvent;
  s.a = static_cast<uint32_t>(staged_.size() - 1);
  p_ = q;
  return true;
}

// After an event of a MARK batch of its trace list: the events that follow it in the batch,
// each decoded from its EMPTY_DICT with no open record (open_container would give each the
// same parent, the list right below the MARK). Returns at the first opcode that is not an
// event's EMPTY_DICT, at a FRAME, at the next checkpoint, or at an event the decoder leaves
// to the general path.
void FastBuilder::more_events(uint32_t parent_rec) {
  size_t m = fence();
  if (m == 0 || stack_[m - 1].tag != kOpen || stack_[m - 1].a != parent_rec) return;
  while (p_ < end_ && *p_ == '}' && off(p_) < next_check_ && try_event(parent_rec, false)) {
  }
}

// Between opcodes, every MiB of input, and every half chunk of a read-ahead window.
void FastBuilder::checkpoint() {
  uint64_t at = off(p_);
  if (cancel_ && cancel_->load(std::memory_order_relaxed)) bail();
  if (split_) {
    if (at >= split_stop_) {
      take_tail();
    } else if (split_stop_ == UINT64_MAX && at >= split_try_) {  // start the second half, or hear where
      split_try_ = at + split_step_;
      maybe_split();
    }
    at = off(p_);
  }
  if (window_) {
    window_->release_before(size_t(at));  // only p_ points into the input between opcodes
    next_release_ = at + window_->chunk() / 2;
  }
  if (at >= next_account_) account();
  next_check_ = window_ ? std::min(next_account_, next_release_) : next_account_;
  if (split_) next_check_ = std::min(next_check_, split_stop_ != UINT64_MAX ? split_stop_ : split_try_);
}

// Everything the fast path holds, against the run's memory bound (every MiB of input).
void FastBuilder::account() {
  next_account_ = off(p_) + (uint64_t{1} << 20);
  ticker_.at(off(p_));
  if (!budget_) return;
  uint64_t parse = (stack_.capacity() + fields_.capacity() + atoms_.capacity()) * sizeof(Slot) +
                   opens_.capacity() * sizeof(Open) + memo_.bytes() + spans_.capacity() * sizeof(Span) +
                   span_index_.capacity() * 4 + pending_blocks_.capacity() * sizeof(PendingBlock) +
                   staged_.capacity() * sizeof(Staged) + pstrings_.memory_bytes() + pframes_.memory_bytes() +
                   pstacks_.memory_bytes() + kept_.capacity();
  uint64_t model = 0;
  for (const auto& [i, d] : devices_) model += d.memory_bytes();
  budget_->set(util::Account::Parse, parse);
  budget_->set(util::Account::Model, model);
}

// ---- the opcode loop ------------------------------------------------------------------------

FastResult FastBuilder::run() {
  for (;;) {
    if (p_ >= end_ && !more(p_, 1)) bail();
    if (off(p_) >= next_check_) [[unlikely]]
      checkpoint();
    uint8_t c = *p_++;
    switch (c) {
      case 0x80: {  // PROTO
        uint8_t v = rd<uint8_t>();
        if (v > 5) bail();
        protocol_ = v;
        break;
      }
      case 0x95: {  // FRAME: a buffering hint
        uint64_t n = rd<uint64_t>();
        if (!frame_fits(p_, n)) bail();  // streaming: the frame is there
        break;
      }
      case '.': {  // STOP
        Slot root = pop();
        if (root.tag != kOpen || root.a != 0 || opens_.size() != 1) bail();
        snap_.form = opens_[0].role == R_top ? Form::Dict : Form::List;
        finish(0);
        opens_.clear();
        FastResult out;
        if (keep_) {  // the decoder goes to the end of its input, past the pickle's: errors there count
          std::optional<uint64_t> decoded = window_->finish();
          // A frame longer than what follows it is cut input: the whole input's decoder and
          // the general path report what is wrong.
          if (!decoded || *decoded < frame_end_) bail();
          out.decoded_bytes = *decoded;
        }
        if (window_) window_->close();  // its pages are not part of the peak that follows
        out.protocol = protocol_;
        out.split = split_taken_;
        out.memo_count = memo_count_;
        out.snapshot = renumber();
        return out;
      }
      case '(': {  // MARK
        if (!stack_.empty() && stack_.back().tag == kOpen && opens_[stack_.back().a].role == R_frames &&
            opens_[stack_.back().a].kind == C_list && try_frames_span(stack_.back().a))
          break;
        if (marks_.size() >= 64) bail();
        marks_.push_back(static_cast<uint32_t>(stack_.size()));
        break;
      }
      case '}': {  // EMPTY_DICT
        open_container(C_dict);
        const Open& o = opens_.back();
        if (o.role == R_event) {
          uint32_t parent = o.parent;  // try_event drops the record
          if (try_event(parent)) more_events(parent);
        }
        break;
      }
      case ']': open_container(C_list); break;
      case ')': make_tuple(nullptr, 0); break;
      case 0x85:
      case 0x86:
      case 0x87: {
        size_t n = size_t(c - 0x85 + 1);
        if (stack_.size() < fence() + n) bail();
        make_tuple(stack_.data() + stack_.size() - n, n);
        break;
      }
      case 't': {  // TUPLE
        if (marks_.empty()) bail();
        size_t m = marks_.back();
        marks_.pop_back();
        make_tuple(stack_.data() + m, stack_.size() - m);
        break;
      }
      case 'a': {  // APPEND
        Slot x = pop();
        if (stack_.size() <= fence() || stack_.back().tag != kOpen || opens_[stack_.back().a].kind != C_list) bail();
        consume(stack_.back().a, &x, 1);
        break;
      }
      case 'e': {  // APPENDS
        if (marks_.empty()) bail();
        size_t m = marks_.back();
        marks_.pop_back();
        if (m == 0 || m - 1 < fence() || stack_[m - 1].tag != kOpen || opens_[stack_[m - 1].a].kind != C_list) bail();
        consume(stack_[m - 1].a, stack_.data() + m, stack_.size() - m);
        stack_.resize(m);
        if (tail_ && marks_.empty()) [[unlikely]]
          end_of_batch();
        break;
      }
      case 's': {  // SETITEM
        if (stack_.size() < fence() + 3) bail();
        Slot pair[2] = {stack_[stack_.size() - 2], stack_[stack_.size() - 1]};
        stack_.resize(stack_.size() - 2);
        if (stack_.back().tag != kOpen || opens_[stack_.back().a].kind != C_dict) bail();
        consume(stack_.back().a, pair, 2);
        break;
      }
      case 'u': {  // SETITEMS
        if (marks_.empty()) bail();
        size_t m = marks_.back();
        marks_.pop_back();
        if (m == 0 || m - 1 < fence() || stack_[m - 1].tag != kOpen || opens_[stack_[m - 1].a].kind != C_dict) bail();
        consume(stack_[m - 1].a, stack_.data() + m, stack_.size() - m);
        stack_.resize(m);
        break;
      }
      case 0x94: {  // MEMOIZE
        note_memoize();
        if (stack_.size() <= fence()) bail();
        memo_put(memo_count_, stack_.back());
        ++memo_count_;
        break;
      }
      case 'q': {
        note_put();
        uint8_t i = rd<uint8_t>();
        if (stack_.size() <= fence()) bail();
        memo_put(i, stack_.back());
        break;
      }
      case 'r': {
        note_put();
        uint32_t i = rd<uint32_t>();
        if (stack_.size() <= fence()) bail();
        memo_put(i, stack_.back());
        break;
      }
      case 'h': push(memo_get(rd<uint8_t>())); break;
      case 'j': push(memo_get(rd<uint32_t>())); break;
      case 'N': push(Slot{}); break;
      case 0x88: {
        Slot s;
        s.tag = kBool;
        s.b = 1;
        push(s);
        break;
      }
      case 0x89: {
        Slot s;
        s.tag = kBool;
        push(s);
        break;
      }
      case 'K': push(int_slot(rd<uint8_t>())); break;
      case 'M': push(int_slot(rd<uint16_t>())); break;
      case 'J': push(int_slot(rd<int32_t>())); break;
      case 0x8a: {  // LONG1
        uint8_t n = rd<uint8_t>();
        need(n);
        push(long_slot(p_, n));
        p_ += n;
        break;
      }
      case 0x8b: {  // LONG4
        int32_t n = rd<int32_t>();
        if (n < 0) bail();
        need(uint64_t(n));
        push(long_slot(p_, size_t(n)));
        p_ += n;
        break;
      }
      case 'G': {  // BINFLOAT
        uint64_t be = rd<uint64_t>();
        Slot s;
        s.tag = kFloat;
        s.b = __builtin_bswap64(be);
        push(s);
        break;
      }
      case 0x8c: {
        uint64_t n = rd<uint8_t>();
        need(n);
        push(str_slot(p_, n));
        p_ += n;
        break;
      }
      case 'X': {
        uint64_t n = rd<uint32_t>();
        need(n);
        push(str_slot(p_, n));
        p_ += n;
        break;
      }
      case 0x8d: {
        uint64_t n = rd<uint64_t>();
        need(n);
        push(str_slot(p_, n));
        p_ += n;
        break;
      }
      case 'C':
      case 'B':
      case 0x8e:
      case 0x96: {
        uint64_t n = c == 'C' ? rd<uint8_t>() : c == 'B' ? rd<uint32_t>() : rd<uint64_t>();
        need(n);
        p_ += n;
        Slot s;
        s.tag = kOther;
        push(s);
        break;
      }
      default: bail();  // text opcodes, POP, DUP, sets, and everything that imports or calls
    }
  }
}

// ---- a split parse ----------------------------------------------------------------------------

//
// SplitParse. A large plain input is parsed by two threads: this one from the start, and a
// second one (the tail) from a trace event near the middle to the end of that event's list.
// A pickle cannot be read from the middle in general; the tail lacks three things, each
// handled so that what it makes is what this thread would have made, or is thrown away:
//  - Where an opcode starts. Protocol 4 cuts the opcodes into FRAMEs whose lengths lead
//    from one to the next, so a FRAME a little before the middle is found without reading
//    the rest. From its first opcode the tail walks the opcodes' lengths to the first event
//    list (a list whose first item is a dict with the key "action"), or else to the first
//    such dict past the middle (S). This thread must then reach S exactly between two
//    opcodes, or the tail's work is thrown away.
//  - What lies below it on the stack. The tail starts in the context an event has: an open
//    event list and a MARK. This thread checks at S that this is its own context, and the
//    tail stops (T) at the end of the list's last batch (an APPENDS not followed by MARK),
//    before anything below it.
//  - The memo. The tail knows the entries this thread had made when it started (copied:
//    frames and strings; protocol 4 never replaces an entry), which is why it starts only
//    once the first iterations of a loop are in. A GET of a later index, which may be this
//    thread's entry from before S or the tail's own (the index S has is not known yet), is
//    deferred: as a traceback (a free event's, most often) or as a frame, by its index.
//    This thread resolves each one at S, where the index is known, and goes on alone if any
//    names no entry, or one made after the GET, or the wrong kind; the tail gives up on any
//    other unknown GET (a string, say). The entries the tail made are not copied back: this
//    thread's memo count moves past them, and a later GET of one makes the fast path give way.
// The tail's frames and stacks have provisional ids of its own (its frames marked by
// own_frame_bit_, deferred ones by kDeferredFrame); this thread interns them into its tables
// as it takes the events: a list the tail began is moved whole, one it went on with is
// appended to.
// The thread starts with the parse: it finds the FRAME a little before the middle (hopping
// the FRAME lengths from the start faults in a page of the mapping every 64 KiB: 30 to 40 ms
// of a 1 GB file, which the first half no longer waits for), says so (kPlanned), and waits
// until the first half hands it the seeded second half (kHanded) or gives up the split (kStop).
struct FastBuilder::Split {
  static constexpr uint64_t kNowhere = UINT64_MAX;
  enum Stage : int { kPlanning, kPlanned, kHanded, kStop };
  double at = 0.5;       // SplitOptions::at
  uint64_t target = 0;   // the first opcode of a FRAME a little before the middle
  uint64_t want = 0;     // the middle
  uint64_t look_to = 0;  // how far the second half looks for the start of an event list
  std::atomic<int> stage{kPlanning};
  std::atomic<uint64_t> start{0};  // S, once the second half found it (kNowhere: it did not)
  uint64_t head_memo = 0;          // the first half's memo count when the second half was made
  std::atomic<bool> cancel{false};
  std::unique_ptr<FastBuilder> tail;
  bool tail_ok = false;
  int bail_line = 0;                             // where the second half gave up (MEMSNAP_FAST_DEBUG)
  std::chrono::steady_clock::time_point t0, t1;  // the second half's start and end (the same)
  std::thread thread;
  ~Split() {
    cancel = true;
    stage.store(kStop, std::memory_order_release);
    stage.notify_all();
    if (thread.joinable()) thread.join();
  }
  // Sets target, want and look_to for the pickle [b, b + n); false when no FRAME is there.
  bool plan(const uint8_t* b, uint64_t n);
};

namespace {

// The length of the opcode at q (its argument included), or 0 for one the fast path never
// accepts or one cut by `end`.
size_t op_length(const uint8_t* q, const uint8_t* end) {
  size_t left = size_t(end - q);
  auto with = [&](size_t arg, size_t n) -> size_t { return left >= 1 + arg + n ? 1 + arg + n : 0; };
  auto u8 = [&] { return left >= 2 ? size_t(q[1]) : size_t(0); };
  auto u32 = [&] {
    uint32_t n = 0;
    if (left >= 5) std::memcpy(&n, q + 1, 4);
    return size_t(n);
  };
  auto u64 = [&] {
    uint64_t n = 0;
    if (left >= 9) std::memcpy(&n, q + 1, 8);
    return n > left ? left : size_t(n);
  };
  switch (*q) {
    case '(':
    case '.':
    case '}':
    case ']':
    case ')':
    case 0x85:
    case 0x86:
    case 0x87:
    case 't':
    case 'a':
    case 'e':
    case 's':
    case 'u':
    case 0x94:
    case 'N':
    case 0x88:
    case 0x89: return 1;
    case 'h':
    case 'q':
    case 'K': return with(1, 0);
    case 'M': return with(2, 0);
    case 'j':
    case 'r':
    case 'J': return with(4, 0);
    case 'G':
    case 0x95: return with(8, 0);
    case 0x8c:
    case 0x8a:
    case 'C': return left >= 2 ? with(1, u8()) : 0;
    case 'X':
    case 'B': return left >= 5 ? with(4, u32()) : 0;
    case 0x8b: return left >= 5 && int32_t(u32()) >= 0 ? with(4, u32()) : 0;
    case 0x8d:
    case 0x8e:
    case 0x96: return left >= 9 ? with(8, u64()) : 0;
    default: return 0;
  }
}

}  // namespace

// At the start: a second thread, which finds the FRAME a little before the middle, from
// which the second half looks for where to start. Only a protocol 4+ pickle has FRAMEs.
void FastBuilder::plan_split(const SplitOptions& o) {
  const uint8_t* b = begin_;
  uint64_t n = uint64_t(end_ - begin_);
  if (n < 11 || b[0] != 0x80 || b[1] < 4) return;
  split_ = std::make_unique<Split>();
  split_->at = std::clamp(o.at, 0.0, 1.0);
  split_step_ = std::max<uint64_t>(o.step, 1);
  split_wait_ = o.wait;
  split_try_ = split_step_;
  next_check_ = std::min(next_check_, split_try_);
  Split* raw = split_.get();
  try {
    split_->thread = std::thread([raw, b, n] {
      if (!raw->plan(b, n)) raw->start.store(Split::kNowhere, std::memory_order_relaxed);
      int stage = Split::kPlanning;
      if (!raw->stage.compare_exchange_strong(stage, Split::kPlanned, std::memory_order_acq_rel)) return;  // kStop
      raw->stage.notify_all();
      while ((stage = raw->stage.load(std::memory_order_acquire)) == Split::kPlanned)
        raw->stage.wait(Split::kPlanned, std::memory_order_acquire);
      if (stage != Split::kHanded) return;
      struct Done {
        Split* sp;
        ~Done() { sp->t1 = std::chrono::steady_clock::now(); }
      } done{raw};
      FastBuilder& tb = *raw->tail;
      uint64_t s = tb.find_start(*raw);
      raw->start.store(s ? s : Split::kNowhere, std::memory_order_release);
      if (s == 0) return;
      tb.p_ = tb.begin_ + s;
      try {
        (void)tb.run();
      } catch (const TailStop&) {
        raw->tail_ok = true;
      } catch (const Bail& gave_up) {
        raw->bail_line = gave_up.line;
      } catch (...) {
      }
    });
  } catch (const std::system_error&) {  // no thread to be had: this one reads on alone
    split_.reset();
  }
}

bool FastBuilder::Split::plan(const uint8_t* b, uint64_t n) {
  want = uint64_t(double(n) * at);
  uint64_t from = want - std::min(want, n / 50), pos = 2;
  while (pos + 9 <= n && b[pos] == 0x95) {
    uint64_t len;
    std::memcpy(&len, b + pos + 1, 8);
    uint64_t first = pos + 9;
    if (first >= from) {
      target = first;
      want = std::max(first, want);
      look_to = std::min(n, want + n / 50 + (uint64_t{128} << 10));
      return true;
    }
    if (len > n - first) return false;
    pos = first + len;
  }
  return false;
}

// Whether a trace event dict starts at q (an opcode's start): its first key is "action".
bool FastBuilder::event_at(const uint8_t* q) const {
  if (end_ - q < 16 || *q != '}') return false;
  const uint8_t* r = q + 1;
  if (*r == 0x94) ++r;
  if (*r++ != '(') return false;
  uint64_t idx = UINT64_MAX;
  if (*r == 'h') idx = r[1];
  if (*r == 'j') {
    uint32_t x;
    std::memcpy(&x, r + 1, 4);
    idx = x;
  }
  if (idx < memo_count_) {
    uint32_t h = memo_.get(idx);
    if ((h & ~Memo::kPayload) != Memo::kAtom) return false;
    const Slot& k = atoms_[h & Memo::kPayload];
    return k.tag == kStr && k.sym == Y_action;
  }
  return *r == 0x8c && r[1] == 6 && std::memcmp(r + 2, "action", 6) == 0;
}

// Where the second half starts (0: nowhere): walking the opcodes from `target`, the first
// event of an event list before `look_to` (the list is then moved whole into the model,
// not appended to), or else the first event from `want`.
uint64_t FastBuilder::find_start(const Split& sp) const {
  const uint8_t* q = begin_ + sp.target;
  const uint8_t* stop = begin_ + sp.look_to;
  uint64_t fallback = 0;
  while (q < stop) {
    if (*q == ']' && end_ - q > 3) {
      const uint8_t* r = q + 1;
      if (*r == 0x94) ++r;
      if (*r == '(' && event_at(r + 1)) return off(r + 1);
    }
    if (fallback == 0 && off(q) >= sp.want && event_at(q)) fallback = off(q);
    size_t len = op_length(q, end_);
    if (len == 0) break;
    q += len;
  }
  return fallback;
}

// The first half, every `step` until it starts the second: once the memo knows the event
// keys. The second half looks for its start itself, on its own core, and says where.
void FastBuilder::maybe_split() {
  Split& sp = *split_;
  uint64_t at = off(p_);
  if (sp.tail) {  // started: has it said where?
    uint64_t s = sp.start.load(std::memory_order_acquire);
    if (s == Split::kNowhere)
      split_.reset();
    else if (s != 0)
      split_stop_ = s;
    return;
  }
  // The second half starts once the memo holds most of what a training loop's events
  // refer to (their keys, actions and frames), rather than deferring them or, for a string it
  // cannot know, giving up: when the events so far are three times what came before them
  // (the loop's first iterations), and at least a 32nd of the way in. A file with no frame
  // so far (recorded without stacks) has nothing of the kind to wait for beyond its first
  // events' keys and actions: it starts at the first event list, once a 32nd of the way in
  // (the no-frames benchmark file: 1.8 MB in instead of 4.2; 25 paired runs twice, wall
  // 0.94 and 0.96 of the time, the halves meeting at the middle within a few ms).
  if (!used_memoize_ || protocol_ < 4) return;
  if (split_events_at_ == 0) {
    bool any = live_staged_ > 0;  // an event list has an event
    for (const auto& [i, d] : devices_) any |= !d.trace.empty();
    if (!any) return;
    split_events_at_ = at;
  }
  // Where the middle is, once the second thread has found it (at once when told to wait).
  if (sp.stage.load(std::memory_order_acquire) == Split::kPlanning) {
    if (!split_wait_) return;
    while (sp.stage.load(std::memory_order_acquire) == Split::kPlanning)
      sp.stage.wait(Split::kPlanning, std::memory_order_acquire);
  }
  if (sp.start.load(std::memory_order_acquire) == Split::kNowhere) {  // no FRAME near the middle
    split_.reset();
    return;
  }
  if (at + 4 * split_step_ >= sp.target || used_put_ || pframes_.size() >= (1u << 28) ||
      (budget_ && budget_->left() < uint64_t(end_ - begin_))) {
    split_.reset();
    return;
  }
  const uint64_t loop = pframes_.size() == 0 ? 1 : 4;
  if (at < std::clamp(loop * split_events_at_, sp.target / 32, sp.target / 4)) return;
  auto t = std::make_unique<FastBuilder>(std::span<const uint8_t>(begin_, size_t(end_ - begin_)), nullptr, nullptr,
                                         nullptr, nullptr, nullptr, 0, SplitOptions::none());
  t->tail_ = true;
  t->protocol_ = protocol_;
  t->used_memoize_ = true;
  t->saw_root_ = true;
  t->memo_count_ = memo_count_;
  t->memo_.copy_known(memo_, memo_count_);
  t->atoms_ = atoms_;
  t->tuples_ = tuples_;
  t->own_frame_bit_ = 1u << 28;
  // Its stack ids are kept from ever equalling this half's for the same stack (both would
  // otherwise number a training loop's tracebacks alike): one taken without the map is wrong.
  const FrameId never{kDeferredFrame | (kDeferredFrame - 1)};
  t->pstacks_.intern(std::span<const FrameId>(&never, 1));
  t->cancel_ = &sp.cancel;
  Open dt{};
  dt.role = R_devtraces;
  dt.kind = C_list;
  dt.key = Y_device_traces;
  dt.parent = kNone32;
  Open tr{};
  tr.role = R_trace;
  tr.kind = C_list;
  tr.parent = 0;
  t->opens_ = {dt, tr};
  t->device(0);
  Slot a, b;
  a.tag = b.tag = kOpen;
  b.a = 1;
  t->stack_ = {a, b};
  t->marks_ = {2};
  sp.head_memo = memo_count_;
  sp.tail = std::move(t);
  sp.t0 = std::chrono::steady_clock::now();
  sp.stage.store(Split::kHanded, std::memory_order_release);
  sp.stage.notify_all();
  if (split_wait_) {
    while (sp.start.load(std::memory_order_acquire) == 0) std::this_thread::yield();
    maybe_split();  // hears where
  }
}

// The first half at S (or past it): takes the second half's events and goes on from T, or
// goes on alone when anything is not as the second half assumed.
void FastBuilder::take_tail() {
  std::unique_ptr<Split> sp = std::move(split_);
  bool exact = off(p_) == split_stop_;
  split_stop_ = UINT64_MAX;
  if (!exact) sp->cancel = true;
  auto arrived = std::chrono::steady_clock::now();
  sp->thread.join();
  if (fast_debug()) {
    auto ms = [&](auto a) { return std::chrono::duration<double, std::milli>(a - sp->t0).count(); };
    std::fprintf(stderr,
                 "memsnap: fast path: second half ran %.1f ms; the first half reached it at %.1f ms\n"
                 "memsnap: fast path: split at %llu: %s (fast_build.cpp:%d)\n",
                 ms(sp->t1), ms(arrived), (unsigned long long)sp->start.load(),
                 !exact        ? "not met between opcodes"
                 : sp->tail_ok ? "second half done"
                               : "second half gave up",
                 sp->bail_line);
  }
  if (!exact || !sp->tail_ok) return;
  FastBuilder& t = *sp->tail;
  // This half's context: ... [event list] MARK [events]; what lies below, the second half
  // never reached.
  if (marks_.empty()) return;
  size_t m = marks_.back();
  if (m == 0 || m - 1 < (marks_.size() >= 2 ? marks_[marks_.size() - 2] : 0)) return;
  if (stack_[m - 1].tag != kOpen || opens_[stack_[m - 1].a].role != R_trace) return;
  uint32_t trace_rec = stack_[m - 1].a;
  size_t open_events = 0;
  for (size_t i = m; i < stack_.size(); ++i) {
    if (stack_[i].tag == kOpen && opens_[stack_[i].a].role == R_event)
      ++open_events;
    else if (stack_[i].tag != kEvent)
      return;
  }
  if (opens_.size() != size_t(trace_rec) + 1 + open_events) return;
  // The second half's: stopped at the end of its event list's last batch.
  if (!t.marks_.empty() || t.live_staged_ != 0 || t.stack_.size() != 2 || t.opens_.size() != 2 ||
      t.devices_.size() != 1)
    return;
  for (const auto& [i, d] : t.devices_)
    if (!d.segments.empty() || !d.blocks.empty()) return;
  if (pframes_.size() >= t.own_frame_bit_) return;  // this half's frame ids must not look like the tail's
  if (!t.snap_.annotations.empty()) return;
  // Its deferred GETs: each must name an entry that existed then, this half's (before S) or
  // its own (before the GET), which this half's memo_get would have taken; a traceback must be
  // a stack. `resolved`: this half's stack id, or the second half's own with kDeferredStack.
  // A frame taken by memo index must be a frame.
  const uint64_t at_s = memo_count_, head = sp->head_memo;
  auto entry = [&](uint64_t idx) {  // the handle at a memo index, or 0
    return idx >= at_s ? t.memo_.raw(idx - at_s + head) : memo_.get(idx);
  };
  auto existed = [&](const Deferred& d) { return d.idx < at_s || d.idx - at_s + head < d.count(); };
  std::vector<uint32_t> resolved(t.deferred_.size(), 0);
  for (size_t i = 0; i < t.deferred_.size(); ++i) {
    const Deferred& d = t.deferred_[i];
    if (!existed(d)) return;
    uint32_t h = entry(d.idx), kind = h & ~Memo::kPayload;
    if (kind == Memo::kStack)
      resolved[i] = (h & Memo::kPayload) | (d.idx >= at_s ? kDeferredStack : 0);
    else if (d.stack() || (kind != Memo::kAtom && kind != Memo::kFrame))
      return;
  }
  for (const Deferred& d : t.deferred_frames_)
    if (!existed(d) || (entry(d.idx) & ~Memo::kPayload) != Memo::kFrame) return;

  // Committed. This batch ends here, as the APPENDS the second half read would end it.
  marks_.pop_back();
  consume(trace_rec, stack_.data() + m, stack_.size() - m);
  stack_.resize(m);
  // The second half's frames and stacks, into this half's provisional tables.
  std::vector<uint32_t> kmap(t.pstacks_.size(), kNone32), fmap(t.pframes_.size(), kNone32);
  if (!kmap.empty()) kmap[0] = 0;
  auto map_str = [&](StrId x) { return x.v == 0 ? StrId{0} : pstrings_.intern(t.pstrings_[x]); };
  auto map_own = [&](uint32_t k) -> uint32_t {
    if (kmap[k] != kNone32) return kmap[k];
    tmp_frames_.clear();
    for (FrameId f : t.pstacks_[StackId{k}]) {
      if (f.v & kDeferredFrame) f.v = entry(f.v & ~kDeferredFrame) & Memo::kPayload;
      if (!(f.v & t.own_frame_bit_)) {
        tmp_frames_.push_back(f);
        continue;
      }
      uint32_t local = f.v & ~t.own_frame_bit_;
      if (fmap[local] == kNone32) {
        const Frame& tf = t.pframes_[FrameId{local}];
        Frame nf;
        nf.filename = map_str(tf.filename);
        nf.name = map_str(tf.name);
        nf.line = tf.line;
        fmap[local] = pframes_.intern(nf).v;
      }
      tmp_frames_.push_back(FrameId{fmap[local]});
    }
    kmap[k] = pstacks_.intern(tmp_frames_).v;
    return kmap[k];
  };
  auto map_stack = [&](uint32_t k) -> uint32_t {
    if (!(k & kDeferredStack)) [[likely]]
      return kmap[k] != kNone32 ? kmap[k] : map_own(k);
    uint32_t r = resolved[k & ~kDeferredStack];
    return r & kDeferredStack ? map_own(r & ~kDeferredStack) : r;
  };
  // An event list the second half began is moved whole; the one it went on with is appended.
  auto take = [&](Trace& dst, Trace& src) {
    if (dst.empty()) {
      dst = std::move(src);
      dst.remap_stacks(map_stack);
    } else {
      dst.append(src, map_stack);
      src.clear();
    }
    dst.trim();
  };
  if (last_trace_) last_trace_->trim();
  last_trace_ = nullptr;
  Open& tk = opens_[trace_rec];
  take(device(tk.value).trace, t.devices_.at(0).trace);
  opens_[trace_rec].count += t.opens_[1].count;
  memo_count_ += t.memo_count_ - sp->head_memo;
  p_ = begin_ + t.tail_end_;
  split_taken_ = true;
  if (fast_debug())
    std::fprintf(stderr, "memsnap: fast path: took the second half's work in %.1f ms\n",
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - arrived).count());
}

// ---- ids in the generic builder's order ----------------------------------------------------

Snapshot FastBuilder::renumber() {
  Snapshot& out = snap_;
  std::vector<uint32_t> smap(pstrings_.size(), kNone32), fmap(pframes_.size(), kNone32), kmap(pstacks_.size(), kNone32);
  smap[0] = 0;
  kmap[0] = 0;
  auto map_str = [&](StrId s) {
    if (smap[s.v] == kNone32) smap[s.v] = out.strings.intern(pstrings_[s]).v;
    return StrId{smap[s.v]};
  };
  std::vector<FrameId> frames;
  auto map_stack = [&](uint32_t s) {
    if (kmap[s] != kNone32) return kmap[s];
    frames.clear();
    for (FrameId f : pstacks_[StackId{s}]) {
      if (fmap[f.v] == kNone32) {
        const Frame& pf = pframes_[f];
        Frame nf;
        nf.filename = map_str(pf.filename);
        nf.name = map_str(pf.name);
        nf.line = pf.line;
        fmap[f.v] = out.frames.intern(nf).v;
      }
      frames.push_back(FrameId{fmap[f.v]});
    }
    kmap[s] = out.stacks.intern(frames).v;
    return kmap[s];
  };
  // 1. device traces, in device order (the position in device_traces is the device index)
  for (auto& [index, d] : devices_) d.trace.remap_stacks([&](uint32_t s) { return map_stack(s); });
  // 2. annotations
  for (Annotation& a : out.annotations) {
    if (a.name.v) a.name = map_str(a.name);
    if (a.stage.v) a.stage = map_str(a.stage);
  }
  // 3. segments in file order: each segment's stack, then its blocks'
  std::sort(segment_order_.begin(), segment_order_.end());
  for (auto& [file_index, where] : segment_order_) {
    Device& d = devices_.at(where.first);
    Segment& s = d.segments[where.second];
    s.stack = StackId{map_stack(s.stack.v)};
    for (uint32_t i = s.first_block; i < s.first_block + s.block_count; ++i)
      d.blocks[i].stack = StackId{map_stack(d.blocks[i].stack.v)};
  }
  out.devices.reserve(devices_.size());
  for (auto& [index, d] : devices_) out.devices.push_back(std::move(d));
  for (std::string& w : validate(out)) out.warnings.push_back(std::move(w));
  if (budget_) {
    uint64_t bytes = out.tables_bytes();
    for (const Device& d : out.devices) bytes += d.memory_bytes();
    budget_->set(util::Account::Model, bytes);
  }
  return std::move(out);
}

}  // namespace

namespace {

std::optional<FastResult> build(std::span<const uint8_t> input, const io::ByteSource* arriving, io::ReadAhead* window,
                                const uint8_t* back, util::MemoryBudget* budget, const ProgressFn* progress,
                                uint64_t progress_total, const SplitOptions& split = {}) {
  try {
    FastBuilder b(input, arriving, window, back, budget, progress, progress_total, split);
    return b.run();
  } catch (const Bail& b) {
    // MEMSNAP_FAST_DEBUG=1 says where the fast path gave up (for profiling real files).
    if (fast_debug()) std::fprintf(stderr, "memsnap: fast path: generic path used (fast_build.cpp:%d)\n", b.line);
    return std::nullopt;
  }
}

}  // namespace

std::optional<FastResult> fast_build(std::span<const uint8_t> input, util::MemoryBudget* budget,
                                     const ProgressFn* progress, const SplitOptions& split) {
  return build(input, nullptr, nullptr, nullptr, budget, progress, input.size(), split);
}

std::optional<FastResult> fast_build(const io::ByteSource& source, util::MemoryBudget* budget,
                                     const ProgressFn* progress) {
  if (!source.streaming()) {
    std::span<const uint8_t> all = source.data();
    // A large input with protocol 4's FRAMEs is parsed in two halves, one on each core, from
    // the mapping; when the second half cannot start or gives up, the first reads on alone
    // (see SplitParse). One without FRAMEs is read ahead on the second core.
    // MEMSNAP_SPLIT=0 turns the split off (to compare, or to measure).
    SplitOptions split;
    const char* env = std::getenv("MEMSNAP_SPLIT");
    bool framed = all.size() > 11 && all[0] == 0x80 && all[1] >= 4 && all[2] == 0x95;
    if (all.size() >= split.from && framed && std::thread::hardware_concurrency() > 1 && !(env && *env == '0'))
      return build(all, nullptr, nullptr, nullptr, budget, progress, all.size(), split);
    auto ahead = source.read_ahead();
    // The window counts against --max-memory while the parse reads it. Under a bound of less
    // than half the file (tight: the model alone may need that much) the mapping serves
    // alone, as it did before there was a window, and the bound passes or fails as it did.
    if (ahead && budget && budget->left() < std::max<uint64_t>(all.size() / 2, ahead->window_bytes())) ahead.reset();
    if (!ahead) return fast_build(all, budget, progress);
    if (budget) budget->set(util::Account::Input, ahead->window_bytes());
    std::span<const uint8_t> now(ahead->base(), ahead->wait_for(1));
    auto out = build(now, nullptr, ahead.get(), all.data(), budget, progress, all.size());
    if (budget) budget->set(util::Account::Input, 0);
    return out;
  }
  // Compressed input through a window: progress in decoded bytes against the size the input
  // declares (a hint, so only while the parse has not passed it), else in stored bytes; the
  // decoded size at the end. (A line for stored bytes alone would not show for a 1 GB
  // snapshot that compresses to 40 MB: the CLI shows inputs from 100 MB.)
  auto ahead = source.read_ahead();
  if (ahead && budget && budget->left() < ahead->window_bytes()) ahead.reset();
  if (ahead) {
    ProgressFn stored;
    if (progress && *progress)
      stored = [&](uint64_t parsed, uint64_t) {
        if (parsed <= ahead->size_hint())
          (*progress)(parsed, ahead->size_hint());
        else
          (*progress)(ahead->consumed(), source.stored_bytes());
      };
    if (budget) budget->set(util::Account::Input, ahead->window_bytes());
    std::span<const uint8_t> now(ahead->base(), ahead->wait_for(1));
    auto out = build(now, nullptr, ahead.get(), nullptr, budget, &stored, UINT64_MAX);
    ahead.reset();
    if (budget) budget->set(util::Account::Input, 0);
    if (out && stored) (*progress)(*out->decoded_bytes, *out->decoded_bytes);
    return out;
  }
  // Otherwise the decoder reports its progress in stored bytes while it runs; the parse takes
  // over, in decoded bytes, once their number is known.
  ProgressFn parsed;
  if (progress && *progress)
    parsed = [&](uint64_t done, uint64_t) {
      if (auto total = source.decoded_size()) (*progress)(std::min(done, *total), *total);
    };
  std::span<const uint8_t> now(source.begin(), source.wait_for(1));
  auto out = build(now, &source, nullptr, nullptr, budget, &parsed, UINT64_MAX);
  if (out && parsed) {
    source.wait_for(SIZE_MAX);
    parsed(UINT64_MAX, 0);  // done: a parse that ended before the decoder still shows its end
  }
  return out;
}

}  // namespace memsnap::snapshot::detail
