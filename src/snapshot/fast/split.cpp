// The fast path in two halves: the second half of a large input parsed on another thread.
#include <chrono>
#include <cstdio>
#include <system_error>
#include <thread>

#include "fast_builder.hpp"

namespace memsnap::snapshot::detail::fast {

FastBuilder::~FastBuilder() = default;

FastBuilder::FastBuilder(std::span<const uint8_t> in, const io::ByteSource* arriving, io::ReadAhead* window,
                         const uint8_t* back, util::MemoryBudget* budget, const ProgressFn* progress,
                         uint64_t progress_total, const SplitOptions& split)
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
  std::string bail_at;                           // where the second half gave up (diagnostics)
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

// At the start: a second thread, which finds the FRAME a little before the middle, from
// which the second half looks for where to start. Only a protocol 4+ pickle has FRAMEs.
void FastBuilder::plan_split(const SplitOptions& o) {
  const uint8_t* b = begin_;
  uint64_t n = uint64_t(end_ - begin_);
  if (n < 11 || b[0] != op::PROTO || b[1] < 4) return;
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
        raw->bail_at = where(gave_up);
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
  while (pos + 9 <= n && b[pos] == op::FRAME) {
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
  if (end_ - q < 16 || *q != op::EMPTY_DICT) return false;
  const uint8_t* r = q + 1;
  if (*r == op::MEMOIZE) ++r;
  if (*r++ != op::MARK) return false;
  uint64_t idx = UINT64_MAX;
  if (*r == op::BINGET) idx = r[1];
  if (*r == op::LONG_BINGET) {
    uint32_t x;
    std::memcpy(&x, r + 1, 4);
    idx = x;
  }
  if (idx < memo_count_) {
    uint32_t h = memo_.get(idx);
    if ((h & ~Memo::kPayload) != Memo::kAtom) return false;
    const Slot& k = atoms_[h & Memo::kPayload];
    return k.tag == kStr && k.sym == "action"_w;
  }
  return *r == op::SHORT_BINUNICODE && r[1] == 6 && std::memcmp(r + 2, "action", 6) == 0;
}

// Where the second half starts (0: nowhere): walking the opcodes from `target`, the first
// event of an event list before `look_to` (the list is then moved whole into the model,
// not appended to), or else the first event from `want`.
uint64_t FastBuilder::find_start(const Split& sp) const {
  const uint8_t* q = begin_ + sp.target;
  const uint8_t* stop = begin_ + sp.look_to;
  uint64_t fallback = 0;
  while (q < stop) {
    if (*q == op::EMPTY_LIST && end_ - q > 3) {
      const uint8_t* r = q + 1;
      if (*r == op::MEMOIZE) ++r;
      if (*r == op::MARK && event_at(r + 1)) return off(r + 1);
    }
    if (fallback == 0 && off(q) >= sp.want && event_at(q)) fallback = off(q);
    size_t len = pickle::Scanner::op_length(q, end_);
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
  sp.tail = make_tail(sp);
  sp.head_memo = memo_count_;
  sp.t0 = std::chrono::steady_clock::now();
  sp.stage.store(Split::kHanded, std::memory_order_release);
  sp.stage.notify_all();
  if (split_wait_) {
    while (sp.start.load(std::memory_order_acquire) == 0) std::this_thread::yield();
    maybe_split();  // hears where
  }
}

// The second half, seeded with what this half knows: the memo's frames and strings so far,
// and the context an event has (an open event list of device_traces, a MARK).
std::unique_ptr<FastBuilder> FastBuilder::make_tail(Split& sp) {
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
  dt.key = "device_traces"_w;
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
  return t;
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
  if (diag_) {
    auto ms = [&](auto t) { return std::chrono::duration<double, std::milli>(t - sp->t0).count(); };
    char line[160];
    std::snprintf(line, sizeof line, "fast path: second half ran %.1f ms; the first half reached it at %.1f ms",
                  ms(sp->t1), ms(arrived));
    (*diag_)(line);
    (*diag_)("fast path: split at " + std::to_string(sp->start.load()) + ": " +
             (!exact        ? "not met between opcodes"
              : sp->tail_ok ? "second half done"
                            : "second half gave up") +
             (sp->bail_at.empty() ? "" : " (" + sp->bail_at + ")"));
  }
  if (!exact || !sp->tail_ok) return;
  size_t m = 0;
  uint32_t trace_rec = 0;
  std::vector<uint32_t> resolved;
  if (!tail_fits(*sp->tail, m, trace_rec) || !resolve_deferred(*sp, resolved)) return;
  join_tail(*sp, m, trace_rec, resolved);
  if (diag_) {
    char line[96];
    std::snprintf(line, sizeof line, "fast path: took the second half's work in %.1f ms",
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - arrived).count());
    (*diag_)(line);
  }
}

// Whether the two halves meet as the second assumed: this half is in an event list's batch
// (... [event list] MARK [events]: what lies below, the second half never reached), and the
// second stopped at the end of its event list's last batch, with nothing else made.
bool FastBuilder::tail_fits(const FastBuilder& t, size_t& m, uint32_t& trace_rec) const {
  if (marks_.empty()) return false;
  m = marks_.back();
  if (m == 0 || m - 1 < (marks_.size() >= 2 ? marks_[marks_.size() - 2] : 0)) return false;
  if (stack_[m - 1].tag != kOpen || opens_[stack_[m - 1].a].role != R_trace) return false;
  trace_rec = stack_[m - 1].a;
  size_t open_events = 0;
  for (size_t i = m; i < stack_.size(); ++i) {
    if (stack_[i].tag == kOpen && opens_[stack_[i].a].role == R_event)
      ++open_events;
    else if (stack_[i].tag != kEvent)
      return false;
  }
  if (opens_.size() != size_t(trace_rec) + 1 + open_events) return false;
  if (!t.marks_.empty() || t.live_staged_ != 0 || t.stack_.size() != 2 || t.opens_.size() != 2 ||
      t.devices_.size() != 1)
    return false;
  for (const auto& [i, d] : t.devices_)
    if (!d.segments.empty() || !d.blocks.empty()) return false;
  if (pframes_.size() >= t.own_frame_bit_) return false;  // this half's frame ids must not look like the tail's
  return t.snap_.annotations.empty();
}

// The handle at a memo index as the second half's GETs meant it: this half's entry before S,
// or the second half's own after it (0: none).
uint32_t FastBuilder::tail_entry(const Split& sp, uint64_t idx) const {
  uint64_t at_s = memo_count_;
  return idx >= at_s ? sp.tail->memo_.raw(idx - at_s + sp.head_memo) : memo_.get(idx);
}

// The second half's deferred GETs: each must name an entry that existed then, this half's
// (before S) or its own (before the GET), which this half's memo_get would have taken; a
// traceback must be a stack. `resolved`: this half's stack id, or the second half's own with
// kDeferredStack. A frame taken by memo index must be a frame.
bool FastBuilder::resolve_deferred(const Split& sp, std::vector<uint32_t>& resolved) const {
  const FastBuilder& t = *sp.tail;
  const uint64_t at_s = memo_count_, head = sp.head_memo;
  auto existed = [&](const Deferred& d) { return d.idx < at_s || d.idx - at_s + head < d.count(); };
  resolved.assign(t.deferred_.size(), 0);
  for (size_t i = 0; i < t.deferred_.size(); ++i) {
    const Deferred& d = t.deferred_[i];
    if (!existed(d)) return false;
    uint32_t h = tail_entry(sp, d.idx), kind = h & ~Memo::kPayload;
    if (kind == Memo::kStack)
      resolved[i] = (h & Memo::kPayload) | (d.idx >= at_s ? kDeferredStack : 0);
    else if (d.stack() || (kind != Memo::kAtom && kind != Memo::kFrame))
      return false;
  }
  for (const Deferred& d : t.deferred_frames_)
    if (!existed(d) || (tail_entry(sp, d.idx) & ~Memo::kPayload) != Memo::kFrame) return false;
  return true;
}

// Committed: the second half's events join this half's trace, its frames and stacks this
// half's provisional tables, and this half goes on from where the second stopped.
void FastBuilder::join_tail(Split& sp, size_t m, uint32_t trace_rec, const std::vector<uint32_t>& resolved) {
  FastBuilder& t = *sp.tail;
  // This batch ends here, as the APPENDS the second half read would end it.
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
      if (f.v & kDeferredFrame) f.v = tail_entry(sp, f.v & ~kDeferredFrame) & Memo::kPayload;
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
  memo_count_ += t.memo_count_ - sp.head_memo;
  p_ = begin_ + t.tail_end_;
  split_taken_ = true;
}

}  // namespace memsnap::snapshot::detail::fast
