// Structural invariants of a snapshot, reported as warnings rather than refused.
#include "memsnap/snapshot/validate.hpp"

#include <algorithm>

namespace memsnap::snapshot {

namespace {

// Keeps the first few messages of one kind and counts the rest.
class Collector {
 public:
  explicit Collector(std::vector<std::string>& out) : out_(out) {}
  ~Collector() {
    if (dropped_) out_.push_back("... and " + std::to_string(dropped_) + " more like the above");
  }
  void add(std::string m) {
    if (kept_ < 5) {
      out_.push_back(std::move(m));
      ++kept_;
    } else {
      ++dropped_;
    }
  }

 private:
  std::vector<std::string>& out_;
  int kept_ = 0;
  uint64_t dropped_ = 0;
};

std::string seg_name(const Segment& s) {
  return "segments[" + std::to_string(s.file_index) + "]";
}

}  // namespace

std::vector<std::string> validate(const Snapshot& snap) {
  std::vector<std::string> out;
  {
    Collector tiling(out);
    Collector stated(out);
    for (const Device& d : snap.devices) {
      for (const Segment& s : d.segments) {
        uint64_t sum = 0, alloc = 0, active = 0;
        bool gap = false;
        uint64_t cursor = s.address;
        for (const Block& b : d.blocks_of(s)) {
          sum += b.size;
          if (b.address != cursor) gap = true;
          cursor = b.address + b.size;
          if (b.state == BlockState::ActiveAllocated) alloc += b.size;
          if (b.is_active()) active += b.size;
        }
        if (sum != s.total_size)
          tiling.add(seg_name(s) + ": blocks add up to " + std::to_string(sum) + " bytes but total_size is " +
                     std::to_string(s.total_size));
        else if (gap)
          tiling.add(seg_name(s) + ": block addresses are not contiguous");
        if (s.stated_allocated && *s.stated_allocated != alloc)
          stated.add(seg_name(s) + ": allocated_size is " + std::to_string(*s.stated_allocated) +
                     " but its active_allocated blocks add up to " + std::to_string(alloc));
        if (s.stated_active && *s.stated_active != active)
          stated.add(seg_name(s) + ": active_size is " + std::to_string(*s.stated_active) +
                     " but its active blocks add up to " + std::to_string(active));
      }
    }
  }
  {
    Collector overlap(out);
    for (const Device& d : snap.devices) {
      std::vector<const Segment*> order;
      for (const Segment& s : d.segments)
        if (s.address != 0) order.push_back(&s);  // 0: the file gave no address
      std::sort(order.begin(), order.end(), [](auto* a, auto* b) { return a->address < b->address; });
      for (size_t i = 1; i < order.size(); ++i)
        if (order[i - 1]->address + order[i - 1]->total_size > order[i]->address)
          overlap.add(seg_name(*order[i - 1]) + " and " + seg_name(*order[i]) + " overlap on device " +
                      std::to_string(d.index));
    }
  }
  return out;
}

}  // namespace memsnap::snapshot
