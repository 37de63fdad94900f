// The fast path's builder: one pass over a pickle's opcodes into the model (the class;
// its parts live beside it, one file each).
//
// Why: the generic path (unpickle into a ValueGraph, then walk it) spends most of its
// time and memory on nodes and item ids it throws away. Here every value on the stack
// is a 16-byte Slot; a container is an "open record" whose role (segment, block, frames
// list, trace event, ...) is fixed when it is created, from its parent's role and the
// dict key or list position it is being built for (roles.hpp, made from the schema table).
// Its items are turned into model data when its parent consumes it (APPENDS, SETITEMS,
// ...), and the parent and key/position recorded at creation are checked again then, so a
// wrong guess can never produce a wrong model: anything unexpected makes fast_build return
// nullopt, and the caller runs the generic path, which then gives the same model or the
// exact error.
//
// The memo holds 4-byte handles (memo.hpp): a frame dict becomes a FrameId, a frames list a
// StackId, a string or other atom an index into atoms_. A run of memo GETs inside a frames
// list (most of a real file's bytes) is recognised again by its raw bytes: the same bytes
// with the same memo contents mean the same stack (stacks.cpp). A trace event dict of the
// usual layout is decoded without touching the stack (event.cpp).
//
// Ids: the fast path meets segments before device_traces (the file's order), the generic
// builder walks traces first. Strings, frames and stacks are therefore interned into
// provisional tables and renumbered at the end in the generic builder's order, so every id
// and table is identical (renumber.cpp).
//
// The rooms: roles.hpp (roles and field slots), slot.hpp (stack values, open records),
// memo.hpp (memo and spans), containers.cpp (opening, consuming and finishing containers),
// stacks.cpp (frames lists), event.cpp (the fixed-layout event decoder), run.cpp (the opcode
// loop and the entry points), split.cpp (a parse in two halves), renumber.cpp (ids in the
// general builder's order).
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "../fast_build.hpp"
#include "memo.hpp"
#include "memsnap/io/read_ahead.hpp"
#include "memsnap/pickle/opcodes.hpp"
#include "memsnap/pickle/scanner.hpp"
#include "memsnap/util/flat_map.hpp"
#include "memsnap/util/hash.hpp"
#include "memsnap/util/pod_buffer.hpp"
#include "slot.hpp"

namespace memsnap::snapshot::detail::fast {

namespace op = pickle::op;

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
              const SplitOptions& split = {});  // split.cpp, where Split is complete
  ~FastBuilder();                               // split.cpp, where Split is complete
  FastBuilder(const FastBuilder&) = delete;
  FastBuilder& operator=(const FastBuilder&) = delete;

  FastResult run();
  /// Where to say what the parse chose (nullptr: silent).
  void set_diagnostics(const Diagnostics* d) { diag_ = d && *d ? d : nullptr; }

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
  [[gnu::always_inline]] Slot str_slot(const uint8_t* p, uint64_t n) {
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
  [[gnu::always_inline]] static Slot long_slot(const uint8_t* p, size_t len) {
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
  // checked they exist): see pickle::Scanner::small_int. Sets v as the general decoding does
  // and returns the opcode's length, or returns 0 for anything else.
  [[gnu::always_inline]] static uint8_t int_op(const uint8_t* q, Slot& v) {
    int64_t x;
    uint8_t n = pickle::Scanner::small_int(q, x);
    if (n) v = int_slot(x);
    return n;
  }

  // ---- typed reads, mirroring the generic builder (anything it would refuse: bail) ----
  [[gnu::always_inline]] static uint64_t size_of(const Slot& s) {
    if (s.tag == kInt && int64_t(s.b) >= 0) return s.b;
    if (s.tag == kUInt) return s.b;
    bail();
  }
  [[gnu::always_inline]] static uint64_t bits_of(const Slot& s) {
    if (s.tag == kInt || s.tag == kUInt) return s.b;
    bail();
  }
  [[gnu::always_inline]] static int64_t int_of(const Slot& s) {
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

  // The plain fields of role R (schema.hpp: those with a member pointer), each converted by
  // its type into its member of `obj` as the general builder converts it (else: bail).
  template <schema::Role R, class Obj>
  void plain(Obj& obj, const Slot* f, uint32_t seen) const {
    schema::for_each_plain<R>([&](int k, schema::Type type, std::string_view, auto member) {
      if (!((seen >> k) & 1u)) return;
      using V = typename schema::Plain<std::remove_cvref_t<decltype(obj.*member)>>::value;
      if constexpr (std::is_same_v<V, uint64_t>)
        obj.*member = type == schema::Type::Size ? size_of(f[k]) : bits_of(f[k]);
      else if constexpr (std::is_same_v<V, int64_t>)
        obj.*member = int_of(f[k]);
      else if constexpr (std::is_same_v<V, bool>)
        obj.*member = bool_of(f[k]);
      else
        obj.*member = V(str_of(f[k]));
    });
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

  // ---- the opcode loop's parts (run.cpp) ------------------------------------------------
  [[gnu::always_inline]] inline void atom(uint8_t c);
  Slot long_arg(uint64_t n);
  Slot str_arg(uint64_t n);
  Slot bytes_arg(uint64_t n);
  FastResult stop();
  [[gnu::always_inline]] inline void mark();
  [[gnu::always_inline]] inline void empty_dict();
  size_t pop_mark();
  uint32_t container_below(size_t m, CKind k) const;
  void append();
  [[gnu::always_inline]] inline void appends();
  void setitem();
  [[gnu::always_inline]] inline void setitems();
  void put(uint64_t idx);

  // ---- containers ---------------------------------------------------------------------
  void open_container(CKind k);
  Slot finish(uint32_t rec);
  void consume(uint32_t rec, const Slot* items, size_t n);
  uint32_t check_consumed(uint32_t rec, const Slot* it, size_t n) const;
  void consume_pairs(uint32_t rec, const Slot* it, size_t n);
  void consume_items(uint32_t rec, const Slot* it, size_t n);
  void consume_frames(uint32_t rec, const Slot* it, size_t n);
  void consume_events(uint32_t rec, const Slot* it, size_t n);
  void make_tuple(const Slot* items, size_t n);
  bool try_frames_span(uint32_t rec);
  uint32_t decode_span(const uint8_t* a, const uint8_t* b);
  uint32_t extend_stack(uint32_t base, std::span<const FrameId> more);
  bool try_event(uint32_t parent_rec, bool open = true);
  // An event being decoded (event.cpp): where it is, the memo writes it would make, and its
  // fields so far (the action, traceback and device_free slots kept for the end, where
  // make_event's rules apply; all fields as a Slot[] cost a 16-byte store and load of each
  // field: 147 against 133 ms for a one-thread load of the no-frames benchmark file).
  struct EventRead {
    static constexpr int kPuts = 8;
    struct PendingPut {
      uint64_t idx;
      uint32_t handle;
    } puts[kPuts];
    int nputs = 0;
    const uint8_t* q = nullptr;
    uint64_t count = 0;  // the memo count after the opcodes read so far
    TraceEvent ev;
    Slot action, frames, device_free;
    uint32_t seen = 0;
    uint32_t nkeys = 0;  // keys read so far, while all were GETs (see key_op_)
  };
  [[gnu::always_inline]] inline bool event_lookup(const EventRead& r, uint64_t idx, uint32_t& h) const;
  [[gnu::always_inline]] inline bool event_memoize(EventRead& r, uint32_t handle);
  uint32_t event_atom(Slot s);  // by value: a reference let the value decoded escape to memory
  [[gnu::always_inline]] inline bool event_slot(uint32_t h, Slot& out) const;
  [[gnu::always_inline]] inline bool event_key(EventRead& r, Sym& key);
  [[gnu::always_inline]] inline bool event_value(EventRead& r, Sym key);
  [[gnu::always_inline]] inline bool event_frames(EventRead& r, Slot& v);
  [[gnu::always_inline]] inline void event_commit(const EventRead& r, uint32_t parent_rec, bool open);
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
    if (s.epoch != epoch_ || uint64_t(end_ - a) <= s.len || a[s.len] != op::APPENDS ||
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
  // The slow part takes and returns the pointer by value, so that q's address never escapes
  // the event decoder (see event_value: an escaped EventRead is kept in memory).
  void skip_frame_ops(const uint8_t*& q) {
    if (q < end_ && *q == op::FRAME) [[unlikely]]
      q = skip_frame_ops_slow(q);
  }
  const uint8_t* skip_frame_ops_slow(const uint8_t* q);

  Device& device(int64_t index) {
    if (index < 0 || index > 65535) bail();
    auto [it, inserted] = devices_.try_emplace(index);
    if (inserted) it->second.index = static_cast<int>(index);
    return it->second;
  }
  TraceEvent make_event(const Slot* f, uint32_t seen);
  static Action action_of(const Slot& a);
  uint32_t frame_of(const Open& o);
  StrId intern_str(const Slot& s);
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
    Sym sym = Y_none;
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
  // The id each long string took, by where its bytes are read (see intern_str): the offset
  // (in the input or kept_) -> its length << 32 | its StrId.
  FlatMap64<uint64_t> long_strs_;
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
  std::unique_ptr<FastBuilder> make_tail(Split& sp);
  bool tail_fits(const FastBuilder& t, size_t& m, uint32_t& trace_rec) const;
  uint32_t tail_entry(const Split& sp, uint64_t idx) const;
  bool resolve_deferred(const Split& sp, std::vector<uint32_t>& resolved) const;
  void join_tail(Split& sp, size_t m, uint32_t trace_rec, const std::vector<uint32_t>& resolved);
  // The second half, at the end of a batch of its event list: another batch follows, or
  // the list is done and so is this half (the first half goes on from here).
  void end_of_batch() {
    const uint8_t* q = p_;
    skip_frame_ops(q);
    if (q < end_ && *q == op::MARK) return;
    tail_end_ = off(p_);
    throw TailStop{};
  }
  const Diagnostics* diag_ = nullptr;          // LoadOptions::diagnostics, or nullptr
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

}  // namespace memsnap::snapshot::detail::fast
