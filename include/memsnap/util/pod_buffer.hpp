// A growable array of trivially copyable values: no zero-fill on growth. Below 64 KiB an
// array is a heap block grown by realloc; up to 2 MiB, a mapping of small pages grown by
// mremap; from 2 MiB it lives in its own mapping, 2 MiB-aligned,
// sized in whole 2 MiB pages and advised MADV_HUGEPAGE, and grows by moving its pages into a
// larger aligned mapping (mremap with MREMAP_FIXED): no copy, never two copies at once, huge
// pages kept whole. Why huge pages: on the benchmark machine (a VM) a first-touch fault of a
// 4 KiB page costs about 4 us, and such faults were a sixth of `analyze`'s time (perf:
// exc_page_fault under Trace::push_back and Replay::sweep_alloc). While an array grows, the
// pages it will write next are handed to util::prefault, so their first-touch faults are
// taken on the second core (see prefault.hpp): for small pages, the part each growth adds;
// for huge pages, the two past the one push_back is writing. A mapped array therefore holds
// up to two populated huge pages (or 1 MiB of small ones) beyond its size until trim().
// In a portable build (memory_mode.hpp) an array is a heap block grown by realloc at every
// size, and trim() does nothing.
#pragma once

#include "memsnap/util/memory_mode.hpp"
#if !MEMSNAP_PORTABLE_MEMORY
#include <sys/mman.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

#include "memsnap/util/prefault.hpp"

namespace memsnap::util {

/// A fresh read-write anonymous mapping of `bytes` (a multiple of 2 MiB) starting on a
/// 2 MiB boundary and advised MADV_HUGEPAGE; nullptr when it cannot be made. `flags` are
/// added to mmap's (MAP_NORESERVE for a reservation that is mostly never touched). Give it back
/// with unmap_huge. In a portable build: zeroed heap memory (calloc), without the alignment.
#if MEMSNAP_PORTABLE_MEMORY
inline void* map_huge_aligned(size_t bytes, int = 0) {
  return std::calloc(1, bytes);
}
inline void unmap_huge(void* p, size_t) {
  std::free(p);
}
#else
inline void unmap_huge(void* p, size_t bytes) {
  munmap(p, bytes);
}
inline void* map_huge_aligned(size_t bytes, int flags = 0) {
  constexpr size_t kHuge = size_t{2} << 20;
  size_t span = bytes + kHuge;
  void* m = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  auto base = reinterpret_cast<uintptr_t>(m);
  uintptr_t start = (base + kHuge - 1) & ~uintptr_t(kHuge - 1);
  if (start > base) munmap(m, start - base);
  if (base + span > start + bytes) munmap(reinterpret_cast<void*>(start + bytes), base + span - (start + bytes));
  void* q = reinterpret_cast<void*>(start);
#ifdef MADV_HUGEPAGE
  madvise(q, bytes, MADV_HUGEPAGE);  // a hint: failure only costs speed
#endif
  return q;
}
#endif

template <class T>
class PodBuffer {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  PodBuffer() = default;
  PodBuffer(const PodBuffer&) = delete;
  PodBuffer& operator=(const PodBuffer&) = delete;
  PodBuffer(PodBuffer&& o) noexcept
      : p_(o.p_), n_(o.n_), cap_(o.cap_), limit_(o.limit_), map_bytes_(o.map_bytes_), ahead_(o.ahead_) {
    o.p_ = nullptr, o.n_ = o.cap_ = o.limit_ = o.map_bytes_ = o.ahead_ = 0;
  }
  PodBuffer& operator=(PodBuffer&& o) noexcept {
    if (this != &o) {
      release();
      p_ = o.p_, n_ = o.n_, cap_ = o.cap_, limit_ = o.limit_, map_bytes_ = o.map_bytes_, ahead_ = o.ahead_;
      o.p_ = nullptr, o.n_ = o.cap_ = o.limit_ = o.map_bytes_ = o.ahead_ = 0;
    }
    return *this;
  }
  ~PodBuffer() { release(); }

  /// An explicit copy (copying is deliberate: the type is meant for large arrays).
  PodBuffer clone() const {
    PodBuffer c;
    if (n_) {
      c.grow_to(n_);
      std::memcpy(c.p_, p_, n_ * sizeof(T));
      c.n_ = n_;
    }
    return c;
  }
  void clear() { n_ = 0; }
  T* begin() { return p_; }
  T* end() { return p_ + n_; }
  const T* begin() const { return p_; }
  const T* end() const { return p_ + n_; }

  size_t size() const { return n_; }
  size_t capacity() const { return cap_; }
  T* data() { return p_; }
  const T* data() const { return p_; }
  T& operator[](size_t i) { return p_[i]; }
  const T& operator[](size_t i) const { return p_[i]; }

  void reserve(size_t n) {
    if (n > cap_) grow_to(n);
  }
  void push_back(const T& v) {
    if (n_ >= limit_) [[unlikely]]
      at_limit();
    p_[n_++] = v;
  }
  /// New elements are left uninitialised: the caller writes them.
  void resize_uninitialized(size_t n) {
    if (n > cap_) grow_to(n > cap_ * 2 ? n : cap_ * 2);
    n_ = n;
  }
  void truncate(size_t n) { n_ = n; }
  /// Gives the pages past the last element back to the system (a mapped array's last
  /// huge page is split). For an array that is done growing: it costs a fault per
  /// 4 KiB page if it grows again.
  void trim() {
#if !MEMSNAP_PORTABLE_MEMORY
    if (!map_bytes_) return;
    size_t used = (n_ * sizeof(T) + kSmallPage - 1) & ~(kSmallPage - 1);
    if (used < map_bytes_) {
      forget_prefault(reinterpret_cast<char*>(p_) + used, map_bytes_ - used);
      madvise(reinterpret_cast<char*>(p_) + used, map_bytes_ - used, MADV_DONTNEED);
      ahead_ = std::min(ahead_, used);
    }
#endif
  }

 private:
  static constexpr size_t kSmallMapped = size_t{64} << 10;  // from here a mapping of small pages
  static constexpr size_t kMapped = size_t{2} << 20;        // from here a mapping of huge pages
  static constexpr size_t kHugePage = size_t{2} << 20;      // mappings are whole huge pages
  static constexpr size_t kSmallPage = 4096;
  static size_t round_up(size_t bytes) {
    return (bytes + kHugePage - 1) & ~(kHugePage - 1);
  }
  void release() {
    if (p_ == nullptr) return;
#if !MEMSNAP_PORTABLE_MEMORY
    if (map_bytes_) {
      forget_prefault(p_, map_bytes_);
      munmap(p_, map_bytes_);
      return;
    }
#endif
    std::free(p_);
  }
  static void* map_aligned(size_t bytes) {
    void* q = map_huge_aligned(bytes);
    if (q == nullptr) throw std::bad_alloc();
    return q;
  }
  void grow_to(size_t n) {
    size_t bytes = n * sizeof(T);
    if (n != 0 && bytes / n != sizeof(T)) throw std::bad_alloc();
    if (bytes > (size_t{1} << 48)) throw std::bad_alloc();  // no wrap in the rounding below
    void* q;
    if (kPortableMemory || bytes < kSmallMapped) {
      q = std::realloc(p_, bytes);
      if (q == nullptr) throw std::bad_alloc();
    }
#if !MEMSNAP_PORTABLE_MEMORY
    else if (bytes < kMapped) {
      // Small pages in a mapping of their own that mremap grows in place or moves: a heap
      // block's realloc copied (perf: memcpy under _int_realloc, 7% of a 114 MB analyze)
      // and touched every new block afresh.
      bytes = (bytes + kSmallPage - 1) & ~(kSmallPage - 1);
      n = bytes / sizeof(T);
      size_t written = map_bytes_ ? map_bytes_ : (n_ * sizeof(T)) & ~(kSmallPage - 1);
      if (map_bytes_) {
        forget_prefault(p_, map_bytes_);
        q = mremap(p_, map_bytes_, bytes, MREMAP_MAYMOVE);
        if (q == MAP_FAILED) throw std::bad_alloc();  // the old mapping is intact
      } else {
        q = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (q == MAP_FAILED) throw std::bad_alloc();
        if (n_) std::memcpy(q, p_, n_ * sizeof(T));
        std::free(p_);
      }
      map_bytes_ = bytes;
      prefault(static_cast<char*>(q) + written, bytes - written);  // the new part, at most 1 MiB
      ahead_ = bytes;
    } else {
      bytes = round_up(bytes);
      n = bytes / sizeof(T);
      q = map_aligned(bytes);
      if (map_bytes_) {
        // Move the old pages into the new mapping's head: page tables move, nothing is
        // copied. A plain mremap to wherever the kernel likes would leave the array
        // misaligned and split its huge pages. Small pages (the first growth past 2 MiB) move
        // too: they were copied before, and perf showed that copy's first touch of a fresh
        // huge page, on the parsing thread, at 15% of a 114 MB analyze's samples (a VM, where
        // a fault of fresh memory costs about 4 us per 4 KiB). Moved pages stay a VMA of
        // their own (their page offset is not the new mapping's), so the array is several
        // VMAs; kernels before 6.17 move only one VMA at a time, and there the next growth
        // copies below, as it did after any move.
        forget_prefault(p_, map_bytes_);
        if (mremap(p_, map_bytes_, map_bytes_, MREMAP_MAYMOVE | MREMAP_FIXED, q) == MAP_FAILED) {
          std::memcpy(q, p_, n_ * sizeof(T));
          munmap(p_, map_bytes_);
        }
      } else {
        if (n_) std::memcpy(q, p_, n_ * sizeof(T));
        std::free(p_);
      }
      map_bytes_ = bytes;
    }
#endif
    p_ = static_cast<T*>(q);
    cap_ = n;
    limit_ = cap_;
    if (map_bytes_) look_ahead();
  }
  // push_back has reached limit_: the end of the capacity, or a huge page whose successors
  // are to be prefaulted. Leaves room for one more element.
  void at_limit() {
    if (n_ == cap_)
      grow_to(cap_ ? cap_ * 2 : 64);  // looks ahead itself
    else if (map_bytes_)
      look_ahead();
    else
      limit_ = cap_;
  }
  // In the second half of the huge page the next element falls in, requests the page after
  // it (and this one, if not yet requested), and sets limit_ to this page's end; in the
  // first half, only sets limit_ to the half. A page is thus requested about a megabyte
  // before it is needed, and an array that stops growing has faulted at most that one page
  // it never uses. Requesting the two pages after the current one on entering it left up
  // to two: 6 of the 28 huge pages a run on the no-frames benchmark file faulted, and its
  // peak RssAnon 57 MiB (0.49x the file) where it is now 45 to 47.
  void look_ahead() {
    if (kPortableMemory || map_bytes_ < kMapped) {  // small pages: the new part was requested whole when mapped
      limit_ = cap_;
      return;
    }
    size_t at = n_ * sizeof(T);
    size_t page = at & ~(kHugePage - 1), half = page + kHugePage / 2;
    if (at < half) {
      limit_ = std::min(cap_, half / sizeof(T));
      return;
    }
    size_t want = std::min(map_bytes_, page + 2 * kHugePage);
    if (want > ahead_) {
      size_t from = std::max(ahead_, page);
      prefault(reinterpret_cast<char*>(p_) + from, want - from);
      ahead_ = want;
    }
    limit_ = std::min(cap_, (page + kHugePage) / sizeof(T));
  }

  T* p_ = nullptr;
  size_t n_ = 0;
  size_t cap_ = 0;
  size_t limit_ = 0;      // push_back's slow path runs from here: cap_, or sooner in a mapping
  size_t map_bytes_ = 0;  // the mapping's length, or 0 while the array is on the heap
  size_t ahead_ = 0;      // bytes of the mapping requested from prefault (or known touched)
};

}  // namespace memsnap::util
