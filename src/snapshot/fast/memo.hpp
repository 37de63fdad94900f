// The fast path's memo (4-byte handles in lazily mapped pages) and its remembered spans
// of memo GETs (see fast_builder.hpp).
#pragma once

#include <cstdint>
#include <vector>

#include "memsnap/util/memory_mode.hpp"
#include "memsnap/util/pod_buffer.hpp"
#include "memsnap/util/prefault.hpp"
#include "slot.hpp"

namespace memsnap::snapshot::detail::fast {

// Memo: 4-byte handles in pages of 4096, a page allocated only when it holds a useful
// entry (trace event dicts, memoized by the pickler and never referenced, cost nothing).
class Memo {
 public:
  static constexpr uint32_t kAtom = 1u << 29, kFrame = 2u << 29, kStack = 3u << 29, kOpenList = 4u << 29,
                            kPayload = (1u << 29) - 1;
  Memo() = default;
  Memo(const Memo&) = delete;
  ~Memo() {
    for (void* c : chunks_) {
      util::forget_prefault(c, kChunk);
      util::unmap_huge(c, kChunk);
    }
  }
  [[gnu::always_inline]] uint32_t get(uint64_t i) const {
    if (i >= limit_) return 0;
    return raw(i);
  }
  // The entry at i whatever the limit (a split parse's own entries, see copy_known).
  [[gnu::always_inline]] uint32_t raw(uint64_t i) const {
    uint64_t page = i >> 12;
    if (page >= pages_.size() || pages_[page] == nullptr) return 0;
    return pages_[page][i & 4095];
  }
  // Returns true when a frame entry was replaced by something else (remembered spans are stale).
  bool put(uint64_t i, uint32_t h) {
    uint64_t page = i >> 12;
    if (page >= pages_.size()) {
      if (h == 0) return false;
      pages_.resize(page + 1, nullptr);
    }
    uint32_t*& p = pages_[page];
    if (p == nullptr) {
      if (h == 0) return false;
      p = new_page();
    }
    uint32_t old = p[i & 4095];
    p[i & 4095] = h;
    return (old & ~kPayload) == kFrame && old != h;  // spans depend on frame entries only
  }
  size_t bytes() const { return pages_.size() * 8 + chunks_.size() * kChunk; }
  // An input read ahead (a large file) keeps a spare chunk from the first: its first few
  // chunks' faults were taken on the parsing thread (perf: Memo::put under
  // do_huge_pmd_wp_page, 5% of a 114 MB analyze).
  void large_input() { spare_from_ = 0; }
  // The second half of a split parse (see SplitParse): entries [0, n) are `from`'s frames and
  // atoms, and every index from n on is unknown here: get() reads no entry there. What this
  // half memoizes itself goes on from n, for raw() once the true index is known.
  void copy_known(const Memo& from, uint64_t n) {
    for (uint64_t i = 0; i < n; ++i) {
      uint32_t h = from.get(i), kind = h & ~kPayload;
      if (kind == kFrame || kind == kAtom) put(i, h);
    }
    limit_ = n;
  }
  uint64_t limit() const { return limit_; }

 private:
  // Pages come zeroed from 2 MiB anonymous mappings, 128 at a time: as calloc'd pages they
  // were memset on top of the kernel's own zeroing (perf: 4.7% of a 1 GB analyze, nearly
  // all of it here, since every event's frames list is memoized). The chunk after the one
  // in use is mapped early and prefaulted on the second core (see util/prefault.hpp), once
  // the memo has taken a few chunks: a small input is not made to hold a spare.
  static constexpr size_t kChunk = size_t{2} << 20;
  size_t spare_from_ = 4;        // chunks taken before a spare is kept (see large_input)
  uint64_t limit_ = UINT64_MAX;  // indices from here have no entry (copy_known)
  uint32_t* new_page() {
    if (chunk_left_ == 0) {
      void* c = spare_ ? spare_ : map_chunk();
      if (c == nullptr) bail();
      spare_ = nullptr;
      if (chunks_.size() >= spare_from_ && (spare_ = map_chunk())) util::prefault(spare_, kChunk);
      chunk_next_ = static_cast<uint32_t*>(c);
      chunk_left_ = kChunk / (4096 * sizeof(uint32_t));
    }
    uint32_t* p = chunk_next_;
    chunk_next_ += 4096;
    --chunk_left_;
    return p;
  }
  std::vector<uint32_t*> pages_;
  void* map_chunk() {
    void* c = util::map_huge_aligned(kChunk);
    if (c) chunks_.push_back(c);
    return c;
  }
  std::vector<void*> chunks_;  // every chunk mapped, spare_ included
  void* spare_ = nullptr;      // mapped, not yet in use
  uint32_t* chunk_next_ = nullptr;
  size_t chunk_left_ = 0;
};

// A remembered run of memo GETs inside a frames list: its bytes decode to `stack`
// as long as no memo entry has been replaced since (epoch).
struct Span {
  uint64_t hash;
  uint64_t offset;
  uint32_t len;
  uint32_t stack;
  uint32_t epoch;
  uint32_t next = 0xFFFFFFFFu;  // the span the next event's traceback had last time (a guess)
};

}  // namespace memsnap::snapshot::detail::fast
