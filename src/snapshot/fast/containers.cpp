// The fast path's containers: which role a new one takes, how its parent consumes it, and
// what it becomes when finished (model data, or a slot its parent reads).
#include <cmath>
#include <cstdlib>

#include "fast_builder.hpp"

namespace memsnap::snapshot::detail::fast {

// ---- container creation: which parent, which role -----------------------------------------

void FastBuilder::open_container(CKind k) {
  size_t n = stack_.size();
  uint32_t parent = kNone32, pos = 0;
  Sym key = Y_none;
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
      key = ks.tag == kStr ? ks.sym : Y_none;
      role = ks.tag == kStr ? child_role(o.role, C_dict, key, k) : (o.role == R_ignore ? R_ignore : R_bail);
      parent = stack_[m - 1].a;
    }
  }
  // (b) SETITEM form, last: a dict with one key is rare, a completed sibling dict is not.
  if (role == R_bail && n >= 2 && stack_[n - 2].tag == kOpen && stack_[n - 1].tag < kOpen &&
      (!have_mark || m <= n - 2)) {
    const Open& o = opens_[stack_[n - 2].a];
    if (o.kind == C_dict) {
      Sym kk = stack_[n - 1].tag == kStr ? stack_[n - 1].sym : Y_none;
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
      if (has(F_blk_history)) bail();  // legacy history: the general path's alone
      plain<schema::Role::block>(b, f, o.seen);
      const Slot& st = f[F_blk_state];
      if (st.tag != kStr) bail();
      switch (st.sym) {
        case "active_allocated"_w: b.state = BlockState::ActiveAllocated; break;
        case "active_pending_free"_w:
        case "active_awaiting_free"_w: b.state = BlockState::ActivePendingFree; break;
        case "inactive"_w: b.state = BlockState::Inactive; break;
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
  if (has(F_fr_filename)) fr.filename = intern_str(f[F_fr_filename]);
  if (has(F_fr_name)) fr.name = intern_str(f[F_fr_name]);
  if (has(F_fr_line)) fr.line = int_of(f[F_fr_line]);
  uint32_t id = pframes_.intern(fr).v;
  if (id & own_frame_bit_) bail();  // the second half of a split parse: its ids would run into the mark
  return id | own_frame_bit_;
}

// A frame's string. A memo GET of a string is the memoised slot again: the same bytes at
// the same place, so a long string (thousands of frames sharing one 1 MiB file name) is
// interned once, and each further reference takes its id by that place instead of hashing
// and comparing the whole string again (issue 38).
StrId FastBuilder::intern_str(const Slot& s) {
  static constexpr size_t kLong = 256;  // shorter strings hash about as fast as the lookup
  std::string_view v = str_of(s);
  if (v.size() < kLong) return pstrings_.intern(v);
  if (const uint64_t* known = long_strs_.find(s.b); known && (*known >> 32) == s.a)
    return StrId{static_cast<uint32_t>(*known)};
  StrId id = pstrings_.intern(v);
  long_strs_[s.b] = uint64_t{s.a} << 32 | id.v;
  return id;
}

Action FastBuilder::action_of(const Slot& a) {
  if (a.tag != kStr) bail();
  switch (a.sym) {
    case "alloc"_w: return Action::Alloc;
    case "free_requested"_w: return Action::FreeRequested;
    case "free_completed"_w: return Action::FreeCompleted;
    case "segment_alloc"_w: return Action::SegmentAlloc;
    case "segment_free"_w: return Action::SegmentFree;
    case "segment_map"_w: return Action::SegmentMap;
    case "segment_unmap"_w: return Action::SegmentUnmap;
    case "snapshot"_w: return Action::Snapshot;
    case "oom"_w: return Action::Oom;
    case "free"_w: return Action::Free;
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
  plain<schema::Role::segment>(s, f, o.seen);
  if (has(F_seg_type)) {
    std::string_view t = str_of(f[F_seg_type]);
    s.pool = t == "small" ? Pool::Small : t == "large" ? Pool::Large : Pool::Unknown;
  }
  if (has(F_seg_pool)) {
    const Slot& t = f[F_seg_pool];
    if (t.tag != kTuple || t.spare == 0) bail();  // spare: all its items are ints
    if (t.a >= 1) s.pool_id[0] = tuples_[t.b].first;
    if (t.a >= 2) s.pool_id[1] = tuples_[t.b].second;
  }
  if (has(F_seg_frames)) s.stack = StackId{stack_of(f[F_seg_frames])};
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
  plain<schema::Role::settings>(s, f, o.seen);
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
  const Slot* it = tmp_items_.data();
  uint32_t first_rec = check_consumed(rec, it, n);
  if (dict)
    consume_pairs(rec, it, n);
  else
    consume_items(rec, it, n);
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

// The open items among `it` must be the newest records, consecutive, each created for this
// parent and for the key or position it now takes. Returns the first of them (kNone32: none).
uint32_t FastBuilder::check_consumed(uint32_t rec, const Slot* it, size_t n) const {
  const Open& parent = opens_[rec];
  Role role = parent.role;
  bool dict = parent.kind == C_dict;
  uint32_t first_rec = kNone32, next_rec = kNone32;
  for (size_t i = 0; i < n; ++i) {
    if (it[i].tag != kOpen) continue;
    const Open& c = opens_[it[i].a];
    if (next_rec == kNone32) first_rec = next_rec = it[i].a;
    if (it[i].a != next_rec++ || c.parent != rec) bail();
    if (dict) {
      if (i % 2 == 0) bail();  // a container as a key
      Sym key = it[i - 1].tag == kStr ? it[i - 1].sym : Y_none;
      Role want =
          it[i - 1].tag == kStr ? child_role(role, C_dict, key, c.kind) : (role == R_ignore ? R_ignore : R_bail);
      if (c.key != key || c.role != want) bail();
    } else {
      if (c.pos != parent.count + i || child_role(role, C_list, Y_none, c.kind) != c.role) bail();
    }
  }
  if (next_rec != kNone32 && next_rec != opens_.size()) bail();
  return first_rec;
}

// Key/value pairs into a dict: each known key's value into its field slot (a roundup dict
// keeps its buckets).
void FastBuilder::consume_pairs(uint32_t rec, const Slot* it, size_t n) {
  Role role = opens_[rec].role;
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
}

// Elements into a list: frames into its stack, events into their trace, and the finished
// records of segments, blocks and annotations.
void FastBuilder::consume_items(uint32_t rec, const Slot* it, size_t n) {
  Role role = opens_[rec].role;
  switch (role) {
    case R_frames: consume_frames(rec, it, n); break;
    case R_trace: consume_events(rec, it, n); break;
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

void FastBuilder::consume_frames(uint32_t rec, const Slot* it, size_t n) {
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
}

void FastBuilder::consume_events(uint32_t rec, const Slot* it, size_t n) {
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
  t.spare = ints ? 1 : 0;
  t.b = tuples_.size();
  tuples_.emplace_back(v[0], v[1]);
  stack_.resize(stack_.size() - n);
  push(t);
}

}  // namespace memsnap::snapshot::detail::fast
