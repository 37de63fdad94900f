// Hand-built snapshot models for unit tests: segments written as lists of (size, state) blocks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "memsnap/snapshot/model.hpp"

namespace memsnap::test {

inline constexpr uint64_t KiB = 1024, MiB = 1024 * 1024;

struct B {
  uint64_t size = 0;
  snapshot::BlockState state = snapshot::BlockState::Inactive;
  uint64_t requested = 0;  // 0: the block's size
  std::string site;        // "file.py:LINE:fn" of a one-frame stack ("" = no stack)
};
inline B alloc(uint64_t size, std::string site = "", uint64_t requested = 0) {
  return {size, snapshot::BlockState::ActiveAllocated, requested, std::move(site)};
}
inline B pending(uint64_t size, std::string site = "") {
  return {size, snapshot::BlockState::ActivePendingFree, 0, std::move(site)};
}
inline B free_(uint64_t size) {
  return {size, snapshot::BlockState::Inactive, 0, ""};
}

struct Seg {
  uint64_t address = 0;
  snapshot::Pool pool = snapshot::Pool::Large;
  std::vector<B> blocks;
  uint64_t stream = 0;
  bool expandable = false;
  int64_t pool_id0 = 0;
};

/// Adds a device with these segments to `snap` (sites become one-frame stacks in its tables).
inline snapshot::Device& add_device(snapshot::Snapshot& snap, const std::vector<Seg>& segs, int index = 0) {
  snapshot::Device d;
  d.index = index;
  for (const Seg& s : segs) {
    snapshot::Segment seg;
    seg.address = s.address;
    seg.pool = s.pool;
    seg.stream = s.stream;
    seg.expandable = s.expandable;
    seg.pool_id[0] = s.pool_id0;
    seg.first_block = static_cast<uint32_t>(d.blocks.size());
    seg.file_index = static_cast<uint32_t>(d.segments.size());
    uint64_t addr = s.address;
    for (const B& b : s.blocks) {
      snapshot::Block blk;
      blk.address = addr;
      blk.size = b.size;
      blk.state = b.state;
      blk.requested_size = b.requested ? b.requested : b.size;
      blk.requested_known = true;
      if (!b.site.empty()) {
        size_t c1 = b.site.find(':'), c2 = b.site.rfind(':');
        snapshot::Frame f;
        f.filename = snap.strings.intern(b.site.substr(0, c1));
        f.line = std::stoll(b.site.substr(c1 + 1, c2 - c1 - 1));
        f.name = snap.strings.intern(b.site.substr(c2 + 1));
        snapshot::FrameId id = snap.frames.intern(f);
        blk.stack = snap.stacks.intern({&id, 1});
      }
      d.blocks.push_back(blk);
      addr += b.size;
      seg.total_size += b.size;
    }
    seg.block_count = static_cast<uint32_t>(d.blocks.size() - seg.first_block);
    d.segments.push_back(seg);
  }
  snap.devices.push_back(std::move(d));
  return snap.devices.back();
}

}  // namespace memsnap::test
