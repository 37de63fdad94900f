// The fast path's event decoder: a trace event dict of the usual layout, read in place.
#include "fast_builder.hpp"

namespace memsnap::snapshot::detail::fast {

// The fixed-layout decoder for a trace event dict: `open`, called right after its EMPTY_DICT
// with the dict's open record the newest; else at the EMPTY_DICT, with none (more_events).
// On success the record (or nothing) is replaced by a staged event; on any surprise nothing
// has changed but what it learnt of the keys (key_op_, which holds only facts of the memo),
// and the general path carries on. Its parts below are inlined into this one loop.
bool FastBuilder::try_event(uint32_t parent_rec, bool open) {
  EventRead r;
  r.q = open ? p_ : p_ + 1;  // without an open record, p_ is at the EMPTY_DICT
  r.count = memo_count_;
  skip_frame_ops(r.q);
  if (r.q < end_ && *r.q == op::MEMOIZE) {  // the dict's own MEMOIZE
    if (used_put_) return false;
    ++r.count;
    ++r.q;
  }
  skip_frame_ops(r.q);
  if (r.q >= end_ || *r.q != op::MARK) return false;
  ++r.q;
  for (;;) {
    skip_frame_ops(r.q);
    if (end_ - r.q < 16) return false;
    if (*r.q == op::SETITEMS) {
      ++r.q;
      break;
    }
    Sym key;
    if (!event_key(r, key)) return false;
    skip_frame_ops(r.q);
    if (end_ - r.q < 16 || !event_value(r, key)) return false;
  }
  // What make_event() does after the fields (any surprise bails, as there).
  if (!(r.seen & (1u << F_ev_action))) bail();
  r.ev.action = action_of(r.action);
  if (r.seen & (1u << F_ev_frames)) r.ev.stack = StackId{stack_of(r.frames)};
  if (r.ev.action == Action::Oom) r.ev.addr = (r.seen & (1u << F_ev_device_free)) ? size_of(r.device_free) : 0;
  event_commit(r, parent_rec, open);
  return true;
}

// The memo entry at idx as this event would see it (its own pending writes first).
bool FastBuilder::event_lookup(const EventRead& r, uint64_t idx, uint32_t& h) const {
  if (idx >= memo_.limit()) return false;  // the second half of a split parse: unknown
  for (int k = r.nputs; k-- > 0;)
    if (r.puts[k].idx == idx) return h = r.puts[k].handle, true;
  h = memo_.get(idx);
  return h != 0;
}

bool FastBuilder::event_memoize(EventRead& r, uint32_t handle) {
  if (r.nputs == EventRead::kPuts || used_put_) return false;
  r.puts[r.nputs++] = {r.count++, handle};
  return true;
}

uint32_t FastBuilder::event_atom(Slot s) {
  if (atoms_.size() > Memo::kPayload) bail();
  atoms_.push_back(s);
  return Memo::kAtom | uint32_t(atoms_.size() - 1);
}

// The slot of a memo handle an event can hold: an atom or a stack.
bool FastBuilder::event_slot(uint32_t h, Slot& out) const {
  switch (h & ~Memo::kPayload) {
    case Memo::kAtom: out = atoms_[h & Memo::kPayload]; return true;
    case Memo::kStack:
      out.tag = kStack;
      out.a = h & Memo::kPayload;
      return true;
    default: return false;
  }
}

// A key: a memo GET (at the first kKeyOps places, recognised by its bytes as the key it
// named last time), or a string written in place. Only its symbol leaves: a whole Slot copied
// out of atoms_ to the stack and read back a byte later measured a tenth of try_event (perf).
bool FastBuilder::event_key(EventRead& r, Sym& sym) {
  uint8_t c = *r.q++;
  uint32_t h;
  Slot key;
  if ((c == op::BINGET || c == op::LONG_BINGET) && r.nkeys < kKeyOps && !used_put_) {
    size_t len = c == op::BINGET ? 1 : 4;
    uint64_t bytes = pickle::Scanner::le<uint64_t>(r.q - 1);
    bytes &= len == 1 ? 0xFFFF : 0xFFFFFFFFFF;
    KeyOp& k = key_op_[r.nkeys++];
    if (k.bytes == bytes) {  // the key at this place last time
      key.tag = kStr;
      key.sym = k.sym;
    } else {
      uint32_t idx = 0;
      std::memcpy(&idx, r.q, len);
      if (!event_lookup(r, idx, h) || !event_slot(h, key)) return false;
      if (key.tag == kStr) k = KeyOp{bytes, key.sym};
    }
    r.q += len;
  } else if (uint32_t idx; uint8_t n = pickle::Scanner::memo_get(r.q - 1, idx)) {
    r.q += n - 1;
    if (!event_lookup(r, idx, h) || !event_slot(h, key)) return false;
  } else if (c == op::SHORT_BINUNICODE) {
    r.nkeys = kKeyOps;
    uint8_t len = *r.q++;
    if (uint64_t(end_ - r.q) < uint64_t(len) + 16) return false;
    key = str_slot(r.q, len);
    r.q += len;
    if (*r.q == op::MEMOIZE) {
      if (!event_memoize(r, event_atom(key))) return false;
      ++r.q;
    }
  } else {
    return false;
  }
  sym = key.sym;
  return key.tag == kStr;
}

// A value, into its field. The event decoder's opcode switch: it stays whole, one case per
// opcode an event's value comes in, because it is the innermost loop of a large load (a
// training trace is mostly events) and split into calls its dispatch measured slower; each
// case is a few lines but the frames list written in place, which has a function of its own.
bool FastBuilder::event_value(EventRead& r, Sym key) {
  int fld = field_of(R_event, key);
  // The integer fields in the opcodes they come in (BININT1, BININT2, BININT, LONG1 of up to
  // 8 bytes), converted at once: in the one switch below, the opcode's dispatch was a fifth
  // of try_event's samples (perf).
  if (fld == F_ev_addr || fld == F_ev_size || fld == F_ev_stream || fld == F_ev_time) {
    Slot v;
    if (uint8_t n = int_op(r.q, v)) {
      if (r.seen & (1u << fld)) return false;
      r.seen |= 1u << fld;
      r.q += n;
      // The four integer cases of the switch at the end, on their own: one lambda for both
      // places measured 5% slower (a one-thread load of the no-frames file, 120 against
      // 115 ms), as this switch then dispatches over all seven fields.
      switch (fld) {
        case F_ev_addr: r.ev.addr = bits_of(v); break;
        case F_ev_size: r.ev.size = size_of(v); break;
        case F_ev_stream: r.ev.stream = bits_of(v); break;
        default: r.ev.time_us = int_of(v); break;  // F_ev_time
      }
      return true;
    }
  }
  // The value in a local Slot, copied to its field at the end. Decoded in place instead (a
  // reference to r.action, r.frames or r.device_free), r's address escaped and the compiler
  // kept all of EventRead in memory: a one-thread load took 5% more samples in try_event
  // (perf, same instructions). For the same reason event_atom takes its Slot by value.
  Slot v;
  uint32_t h;
  uint8_t c = *r.q++;
  switch (c) {
    case op::BINGET:
    case op::LONG_BINGET: {
      uint32_t idx;
      r.q += pickle::Scanner::memo_get(r.q - 1, idx) - 1;
      if (!event_lookup(r, idx, h) || !event_slot(h, v)) {
        if (!tail_ || key != "frames"_w) return false;
        v = defer(idx, r.count);  // another event's traceback, memoized where this half cannot see
      }
      break;
    }
    case op::BININT1:
    case op::BININT2:
    case op::BININT: {
      int64_t x;
      r.q += pickle::Scanner::small_int(r.q - 1, x) - 1;
      v = int_slot(x);
      break;
    }
    case op::LONG1: {
      uint8_t n = *r.q++;
      if (uint64_t(end_ - r.q) < uint64_t(n) + 16) return false;
      v = long_slot(r.q, n);
      r.q += n;
      break;
    }
    case op::NONE: v.tag = kNone; break;
    case op::NEWTRUE:
    case op::NEWFALSE:
      v.tag = kBool;
      v.b = c == op::NEWTRUE;
      break;
    case op::SHORT_BINUNICODE: {
      uint8_t n = *r.q++;
      if (uint64_t(end_ - r.q) < uint64_t(n) + 16) return false;
      v = str_slot(r.q, n);
      r.q += n;
      if (*r.q == op::MEMOIZE) {
        if (!event_memoize(r, event_atom(v))) return false;
        ++r.q;
      }
      break;
    }
    case op::EMPTY_LIST:  // a frames list written in place
      if (key != "frames"_w || !event_frames(r, v)) return false;
      break;
    default: return false;
  }
  if (fld == kNoField) return true;
  if (r.seen & (1u << fld)) return false;
  r.seen |= 1u << fld;
  switch (fld) {
    case F_ev_addr: r.ev.addr = bits_of(v); break;
    case F_ev_size: r.ev.size = size_of(v); break;
    case F_ev_stream: r.ev.stream = bits_of(v); break;
    case F_ev_time: r.ev.time_us = int_of(v); break;
    case F_ev_action: r.action = v; break;
    case F_ev_frames: r.frames = v; break;
    default: r.device_free = v; break;  // F_ev_device_free
  }
  return true;
}

// A frames list written in place, after its EMPTY_LIST: a run of memo GETs the span cache
// knows (or the one guessed from the last traceback), or a single frame by APPEND.
bool FastBuilder::event_frames(EventRead& r, Slot& v) {
  bool memoized = false;
  uint64_t list_idx = 0;
  uint32_t h;
  if (*r.q == op::MEMOIZE) {
    memoized = true;
    list_idx = r.count;
    if (r.nputs == EventRead::kPuts || used_put_) return false;
    ++r.count;
    ++r.q;
  }
  uint32_t stack = 0;
  if (*r.q == op::MARK) {
    // reuse the span path: it needs p_ and an open frames list, so decode directly
    const uint8_t* a = r.q + 1;
    const uint8_t* e = guess_span(a, stack);
    if (e == nullptr) {
      e = pickle::Scanner::skip_memo_gets(a, end_);
      if (e >= end_ || *e != op::APPENDS) return false;
      uint64_t len = uint64_t(e - a);
      if (len > 0) {
        uint32_t k = span_index_[find_span(a, len, util::hash_bytes(a, len, seed_))];
        // First sight, or a memo entry changed since: the general path decodes it.
        if (k == kNone32 || spans_[k].epoch != epoch_) return false;
        stack = spans_[k].stack;
        followed_by(k);
      }
    }
    r.q = e + 1;
  } else if (uint32_t idx; uint8_t n = pickle::Scanner::memo_get(r.q, idx)) {
    const uint8_t* after = r.q + n;
    if (*after != op::APPEND || !event_lookup(r, idx, h) || (h & ~Memo::kPayload) != Memo::kFrame) return false;
    FrameId one{h & Memo::kPayload};
    stack = pstacks_.intern(std::span<const FrameId>(&one, 1)).v;
    r.q = after + 1;
  }
  if (memoized) r.puts[r.nputs++] = {list_idx, Memo::kStack | stack};
  v.tag = kStack;
  v.a = stack;
  return true;
}

// Commit: memo writes, the staged event in place of the open dict.
void FastBuilder::event_commit(const EventRead& r, uint32_t parent_rec, bool open) {
  if (r.nputs || r.count != memo_count_) used_memoize_ = true;
  for (int k = 0; k < r.nputs; ++k)
    if (memo_.put(r.puts[k].idx, r.puts[k].handle)) ++epoch_;
  memo_count_ = r.count;
  staged_.push_back(Staged{r.ev, parent_rec});
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
  p_ = r.q;
}

// After an event of a MARK batch of its trace list: the events that follow it in the batch,
// each decoded from its EMPTY_DICT with no open record (open_container would give each the
// same parent, the list right below the MARK). Returns at the first opcode that is not an
// event's EMPTY_DICT, at a FRAME, at the next checkpoint, or at an event the decoder leaves
// to the general path.
void FastBuilder::more_events(uint32_t parent_rec) {
  size_t m = fence();
  if (m == 0 || stack_[m - 1].tag != kOpen || stack_[m - 1].a != parent_rec) return;
  while (p_ < end_ && *p_ == op::EMPTY_DICT && off(p_) < next_check_ && try_event(parent_rec, false)) {
  }
}

}  // namespace memsnap::snapshot::detail::fast
