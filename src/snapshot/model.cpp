// Interning tables and small helpers of the snapshot model.
#include "memsnap/snapshot/model.hpp"

#include <algorithm>
#include <cstring>

#include "memsnap/util/error.hpp"

namespace memsnap::snapshot {

StringTable::StringTable() { intern(""); }

StrId StringTable::intern(std::string_view s) {
  if (auto it = index_.find(s); it != index_.end()) return StrId{it->second};
  const std::string& stored = storage_.emplace_back(s);
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

StackTable::StackTable() { ranges_.push_back({0, 0}); }

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

const char* to_string(Form f) { return f == Form::List ? "list" : "dict"; }

const Device* Snapshot::device(int index) const {
  auto it = std::lower_bound(devices.begin(), devices.end(), index,
                             [](const Device& d, int i) { return d.index < i; });
  return it != devices.end() && it->index == index ? &*it : nullptr;
}

std::string Snapshot::frame_text(FrameId id) const {
  const Frame& f = frames[id];
  std::string_view file = strings[f.filename];
  if (auto slash = file.rfind('/'); slash != std::string_view::npos) file.remove_prefix(slash + 1);
  return std::string(file) + ":" + std::to_string(f.line) + ":" + std::string(strings[f.name]);
}

}  // namespace memsnap::snapshot
