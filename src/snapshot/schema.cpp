// The model's enumerations as words of the schema: what a block's state or an event's action
// is written as (the exporter, report/export.cpp). The fast path reads the same words in its
// own switch (fast/containers.cpp), inline in the parse.
#include "memsnap/snapshot/schema.hpp"

namespace memsnap::snapshot::schema {

Word word_of(Action a) {
  switch (a) {
    case Action::Alloc: return "alloc"_w;
    case Action::FreeRequested: return "free_requested"_w;
    case Action::FreeCompleted: return "free_completed"_w;
    case Action::SegmentAlloc: return "segment_alloc"_w;
    case Action::SegmentFree: return "segment_free"_w;
    case Action::SegmentMap: return "segment_map"_w;
    case Action::SegmentUnmap: return "segment_unmap"_w;
    case Action::Snapshot: return "snapshot"_w;
    case Action::Oom: return "oom"_w;
    case Action::Free: return "free"_w;
    case Action::Unknown: return "unknown"_w;
  }
  return "unknown"_w;
}

Word word_of(BlockState s) {
  switch (s) {
    case BlockState::ActiveAllocated: return "active_allocated"_w;
    case BlockState::ActivePendingFree: return "active_pending_free"_w;
    case BlockState::Inactive: return "inactive"_w;
  }
  return "inactive"_w;
}

}  // namespace memsnap::snapshot::schema
