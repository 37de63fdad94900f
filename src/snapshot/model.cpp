// Interning tables and small helpers of the snapshot model.
#include "memsnap/snapshot/model.hpp"

#include <algorithm>
#include <cstring>

#include "memsnap/util/error.hpp"

namespace memsnap::snapshot {

StringTable::StringTable() {
  intern("");
}

// Every string of `o` interned afresh in id order: the same ids, views into our own storage.
StringTable::StringTable(const StringTable& o) : StringTable() {
  for (size_t i = 1; i < o.views_.size(); ++i) intern(o.views_[i]);
}

StringTable& StringTable::operator=(const StringTable& o) {
  if (this != &o) *this = StringTable(o);
  return *this;
}

StrId StringTable::intern(std::string_view s) {
  if (auto it = index_.find(s); it != index_.end()) return StrId{it->second};
  const std::string& stored = storage_.emplace_back(s);
  bytes_ += stored.capacity() + 32;
  uint32_t id = static_cast<uint32_t>(views_.size());
  views_.push_back(stored);
  index_.emplace(views_.back(), id);
  return StrId{id};
}

FrameId FrameTable::intern(const Frame& f) {
  Key k{f.filename.v, f.name.v, f.line};
  auto [it, inserted] = index_.try_emplace(k, static_cast<uint32_t>(frames_.size()));
  if (inserted) frames_.push_back(f);
  return FrameId{it->second};
}

StackTable::StackTable() {
  ranges_.push_back({0, 0});
}

StackId StackTable::intern(std::span<const FrameId> frames) {
  if (frames.empty()) return StackId{0};
  uint64_t h = util::hash_bytes(frames.data(), frames.size() * sizeof(FrameId), seed_);
  auto [lo, hi] = index_.equal_range(h);
  for (auto it = lo; it != hi; ++it) {
    auto [start, len] = ranges_[it->second];
    if (len == frames.size() && std::equal(frames.begin(), frames.end(), frames_.begin() + start))
      return StackId{it->second};
  }
  if (frames_.size() + frames.size() > std::numeric_limits<uint32_t>::max())
    throw InputError("", "too many distinct stack frames");
  uint32_t id = static_cast<uint32_t>(ranges_.size());
  ranges_.push_back({static_cast<uint32_t>(frames_.size()), static_cast<uint32_t>(frames.size())});
  frames_.insert(frames_.end(), frames.begin(), frames.end());
  index_.emplace(h, id);
  return StackId{id};
}

// ---- Trace ------------------------------------------------------------------

uint64_t Trace::escaped(const std::vector<std::pair<uint64_t, uint64_t>>& side, size_t i) {
  auto it = std::lower_bound(side.begin(), side.end(), std::pair<uint64_t, uint64_t>{i, 0});
  return it != side.end() && it->first == i ? it->second : 0;
}

Trace& Trace::operator=(const Trace& o) {
  if (this != &o) {
    addr_lo_ = o.addr_lo_.clone();
    addr_hi_ = o.addr_hi_.clone();
    size_ = o.size_.clone();
    time_ = o.time_.clone();
    stack_ = o.stack_.clone();
    action_ = o.action_.clone();
    stream_ = o.stream_.clone();
    time_base_ = o.time_base_;
    big_sizes_ = o.big_sizes_;
    big_times_ = o.big_times_;
  }
  return *this;
}

void Trace::push_back(const TraceEvent& e) {
  size_t i = action_.size();
  addr_lo_.push_back(static_cast<uint32_t>(e.addr));
  addr_hi_.push_back(static_cast<uint32_t>(e.addr >> 32));
  if (e.size < kEscaped) {
    size_.push_back(static_cast<uint32_t>(e.size));
  } else {
    size_.push_back(kEscaped);
    big_sizes_.emplace_back(i, e.size);
  }
  push_time(i, e.time_us);
  stack_.push_back(e.stack.v);
  action_.push_back(e.action);
  stream_.push_back(e.stream);
}

// Event i's time: a delta from its block's base (the block's first time), or escaped.
void Trace::push_time(size_t i, int64_t time_us) {
  if ((i >> kBlockShift) >= time_base_.size()) time_base_.push_back(TraceEvent::kNoTime);
  time_.push_back(encode_time(i, time_us));
}

// The stored form of event i's time; its block's base exists.
int32_t Trace::encode_time(size_t i, int64_t time_us) {
  if (time_us == TraceEvent::kNoTime) return kNoTimeDelta;
  int64_t& base = time_base_[i >> kBlockShift];
  if (base == TraceEvent::kNoTime) base = time_us;
  // Overflow-safe: compare before subtracting.
  bool near = time_us >= base ? uint64_t(time_us) - uint64_t(base) < uint64_t(INT32_MAX)
                              : uint64_t(base) - uint64_t(time_us) < uint64_t(INT32_MAX) - 2;
  if (near) return static_cast<int32_t>(time_us - base);
  big_times_.emplace_back(i, static_cast<uint64_t>(time_us));
  return kEscapedTime;
}

void Trace::append_columns(const Trace& src) {
  size_t n = size(), m = src.size();
  auto copy = [&](auto& dst, const auto& from) {
    dst.resize_uninitialized(n + m);
    if (m) std::memcpy(dst.data() + n, from.data(), m * sizeof(*from.data()));
  };
  copy(addr_lo_, src.addr_lo_);
  copy(size_, src.size_);
  copy(action_, src.action_);
  for (const auto& [i, v] : src.big_sizes_) big_sizes_.emplace_back(i + n, v);
  addr_hi_.append(src.addr_hi_);
  stream_.append(src.stream_);
  // Times are re-encoded: the blocks their bases belong to start at other events here.
  if (m) time_base_.resize(((n + m - 1) >> kBlockShift) + 1, TraceEvent::kNoTime);
  time_.resize_uninitialized(n + m);
  int32_t* out = time_.data() + n;
  size_t escaped_time = 0;  // src's escaped times read so far
  for (size_t j = 0; j < m; ++j) {
    int32_t t = src.time_[j];
    int64_t us = t == kNoTimeDelta   ? TraceEvent::kNoTime
                 : t == kEscapedTime ? static_cast<int64_t>(src.big_times_[escaped_time++].second)
                                     : src.time_base_[j >> kBlockShift] + t;
    out[j] = encode_time(n + j, us);
  }
}

void Trace::reserve(size_t n) {
  addr_lo_.reserve(n);
  addr_hi_.reserve(n);
  size_.reserve(n);
  time_.reserve(n);
  stack_.reserve(n);
  action_.reserve(n);
  stream_.reserve(n);
}

void Trace::trim() {
  addr_lo_.trim();
  addr_hi_.trim();
  size_.trim();
  time_.trim();
  stack_.trim();
  action_.trim();
  stream_.trim();
}

void Trace::clear() {
  *this = Trace();
}

size_t Trace::memory_bytes() const {
  return addr_lo_.capacity() * 4 + addr_hi_.memory_bytes() + size_.capacity() * 4 + time_.capacity() * 4 +
         stack_.memory_bytes() + action_.capacity() + stream_.memory_bytes() + time_base_.capacity() * 8 +
         (big_sizes_.capacity() + big_times_.capacity()) * 16;
}

const char* to_string(BlockState s) {
  switch (s) {
    case BlockState::ActiveAllocated: return "active_allocated";
    case BlockState::ActivePendingFree: return "active_pending_free";
    case BlockState::Inactive: return "inactive";
  }
  return "?";
}

const char* to_string(Pool p) {
  switch (p) {
    case Pool::Small: return "small";
    case Pool::Large: return "large";
    case Pool::Unknown: return "unknown";
  }
  return "?";
}

const char* to_string(Action a) {
  switch (a) {
    case Action::Alloc: return "alloc";
    case Action::FreeRequested: return "free_requested";
    case Action::FreeCompleted: return "free_completed";
    case Action::SegmentAlloc: return "segment_alloc";
    case Action::SegmentFree: return "segment_free";
    case Action::SegmentMap: return "segment_map";
    case Action::SegmentUnmap: return "segment_unmap";
    case Action::Snapshot: return "snapshot";
    case Action::Oom: return "oom";
    case Action::Free: return "free";
    case Action::Unknown: return "unknown";
  }
  return "?";
}

const char* to_string(Form f) {
  return f == Form::List ? "list" : "dict";
}

const Device* Snapshot::device(int index) const {
  auto it = std::lower_bound(devices.begin(), devices.end(), index, [](const Device& d, int i) { return d.index < i; });
  return it != devices.end() && it->index == index ? &*it : nullptr;
}

size_t Snapshot::tables_bytes() const {
  return strings.memory_bytes() + frames.memory_bytes() + stacks.memory_bytes();
}

std::string Snapshot::frame_text(FrameId id) const {
  const Frame& f = frames[id];
  std::string_view file = strings[f.filename];
  if (auto slash = file.rfind('/'); slash != std::string_view::npos) file.remove_prefix(slash + 1);
  return std::string(file) + ":" + std::to_string(f.line) + ":" + std::string(strings[f.name]);
}

}  // namespace memsnap::snapshot
