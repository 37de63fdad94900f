// The fast path's last step: strings, frames and stacks renumbered in the general builder's order.
#include "fast_builder.hpp"
#include "memsnap/snapshot/validate.hpp"

namespace memsnap::snapshot::detail::fast {

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
  // A stack's first sight interns it; every later one (most events) is a look-up, kept apart
  // so that it inlines into the loops below whatever the compiler decides for the first.
  auto intern_stack = [&](uint32_t s) {
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
  auto map_stack = [&](uint32_t s) { return kmap[s] != kNone32 ? kmap[s] : intern_stack(s); };
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

}  // namespace memsnap::snapshot::detail::fast
