// PodMemory: the memory machinery under PodBuffer (pod_buffer.hpp): heap blocks, mappings of
// small pages grown by mremap, 2 MiB-aligned mappings of huge pages whose pages move into a
// larger one, and the prefault requests ahead of the writer. A portable build (memory_mode.hpp)
// keeps only the heap block, grown by realloc.
#include "memsnap/util/pod_buffer.hpp"

#include <cstdint>
#include <cstdlib>

#include "memsnap/util/memory_mode.hpp"
#include "memsnap/util/prefault.hpp"
#if !MEMSNAP_PORTABLE_MEMORY
#include <sys/mman.h>
#endif

namespace memsnap::util {

#if MEMSNAP_PORTABLE_MEMORY

size_t PodMemory::grow(size_t bytes, size_t) {
  if (bytes > (size_t{1} << 48)) throw std::bad_alloc();
  void* q = std::realloc(p_, bytes);
  if (q == nullptr) throw std::bad_alloc();
  p_ = q;
  return bytes;
}

size_t PodMemory::look_ahead(size_t) {
  return map_bytes_;  // never asked: a portable array is never mapped
}

void PodMemory::trim(size_t) {}

void PodMemory::release() noexcept {
  std::free(p_);
}

#else

namespace {
constexpr size_t kSmallMapped = size_t{64} << 10;  // from here a mapping of small pages
constexpr size_t kMapped = kHugePage;              // from here a mapping of huge pages
constexpr size_t kSmallPage = 4096;

// Small pages in a mapping of their own that mremap grows in place or moves: a heap block's
// realloc copied (perf: memcpy under _int_realloc, 7% of a 114 MB analyze) and touched every
// new block afresh. `p` of `map_bytes` (0: a heap block holding `used` bytes) becomes `bytes`.
void* grow_small_mapping(void* p, size_t map_bytes, size_t bytes, size_t used) {
  void* q;
  if (map_bytes) {
    forget_prefault(p, map_bytes);
    q = mremap(p, map_bytes, bytes, MREMAP_MAYMOVE);
    if (q == MAP_FAILED) throw std::bad_alloc();  // the old mapping is intact
  } else {
    q = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (q == MAP_FAILED) throw std::bad_alloc();
    if (used) std::memcpy(q, p, used);
    std::free(p);
  }
  size_t written = map_bytes ? map_bytes : used & ~(kSmallPage - 1);
  prefault(static_cast<char*>(q) + written, bytes - written);  // the new part, at most 1 MiB
  return q;
}

// `p` of `map_bytes` (0: a heap block holding `used` bytes) becomes an aligned mapping of
// huge pages, `bytes` long.
void* grow_huge_mapping(void* p, size_t map_bytes, size_t bytes, size_t used) {
  void* q = map_huge_aligned(bytes);
  if (q == nullptr) throw std::bad_alloc();
  if (map_bytes) {
    // Move the old pages into the new mapping's head: page tables move, nothing is
    // copied. A plain mremap to wherever the kernel likes would leave the array
    // misaligned and split its huge pages. Small pages (the first growth past 2 MiB) move
    // too: they were copied before, and perf showed that copy's first touch of a fresh
    // huge page, on the parsing thread, at 15% of a 114 MB analyze's samples (a VM, where
    // a fault of fresh memory costs about 4 us per 4 KiB). Moved pages stay a VMA of
    // their own (their page offset is not the new mapping's), so the array is several
    // VMAs; kernels before 6.17 move only one VMA at a time, and there the next growth
    // copies below, as it did after any move.
    forget_prefault(p, map_bytes);
    if (mremap(p, map_bytes, map_bytes, MREMAP_MAYMOVE | MREMAP_FIXED, q) == MAP_FAILED) {
      std::memcpy(q, p, used);
      munmap(p, map_bytes);
    }
  } else {
    if (used) std::memcpy(q, p, used);
    std::free(p);
  }
  return q;
}

}  // namespace

size_t PodMemory::grow(size_t bytes, size_t used) {
  if (bytes > (size_t{1} << 48)) throw std::bad_alloc();  // no wrap in the rounding below
  if (bytes < kSmallMapped) {
    void* q = std::realloc(p_, bytes);
    if (q == nullptr) throw std::bad_alloc();
    p_ = q;
    return bytes;
  }
  if (bytes < kMapped) {
    bytes = (bytes + kSmallPage - 1) & ~(kSmallPage - 1);
    p_ = grow_small_mapping(p_, map_bytes_, bytes, used);
    ahead_ = bytes;
  } else {
    bytes = (bytes + kHugePage - 1) & ~(kHugePage - 1);
    p_ = grow_huge_mapping(p_, map_bytes_, bytes, used);
  }
  map_bytes_ = bytes;
  return bytes;
}

// In the second half of the huge page the byte `at` falls in, requests the page after it
// (and this one, if not yet requested), and answers this page's end; in the first half,
// answers the half. A page is thus requested about a megabyte before it is needed, and an
// array that stops growing has faulted at most that one page it never uses. Requesting the
// two pages after the current one on entering it left up to two: 6 of the 28 huge pages a
// run on the no-frames benchmark file faulted, and its peak RssAnon 57 MiB (0.49x the file)
// where it is now 45 to 47.
size_t PodMemory::look_ahead(size_t at) {
  if (map_bytes_ < kMapped) return map_bytes_;  // small pages: the new part was requested whole when mapped
  size_t page = at & ~(kHugePage - 1), half = page + kHugePage / 2;
  if (at < half) return half;
  size_t want = std::min(map_bytes_, page + 2 * kHugePage);
  if (want > ahead_) {
    size_t from = std::max(ahead_, page);
    prefault(static_cast<char*>(p_) + from, want - from);
    ahead_ = want;
  }
  return page + kHugePage;
}

void PodMemory::trim(size_t used) {
  if (!map_bytes_) return;
  used = (used + kSmallPage - 1) & ~(kSmallPage - 1);
  if (used < map_bytes_) {
    forget_prefault(static_cast<char*>(p_) + used, map_bytes_ - used);
    madvise(static_cast<char*>(p_) + used, map_bytes_ - used, MADV_DONTNEED);
    ahead_ = std::min(ahead_, used);
  }
}

void PodMemory::release() noexcept {
  if (map_bytes_) {
    forget_prefault(p_, map_bytes_);
    munmap(p_, map_bytes_);
    return;
  }
  std::free(p_);
}

#endif  // MEMSNAP_PORTABLE_MEMORY

}  // namespace memsnap::util
