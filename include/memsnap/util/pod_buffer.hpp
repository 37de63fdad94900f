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
//
// The machinery (mmap, mremap, madvise, the prefault requests) is PodMemory's, a plain class
// over bytes in pod_buffer.cpp; PodBuffer<T> keeps inline only what runs per element
// (push_back, operator[]) and calls it on the slow path.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace memsnap::util {

/// The memory under one PodBuffer, in bytes: a heap block, a mapping of small pages or an
/// aligned mapping of huge pages (see the top of this file), and how much of it has been
/// handed to prefault. Moves, never copies; gives its memory back when destroyed.
class PodMemory {
 public:
  PodMemory() = default;
  PodMemory(PodMemory&& o) noexcept
      : p_(std::exchange(o.p_, nullptr)),
        map_bytes_(std::exchange(o.map_bytes_, 0)),
        ahead_(std::exchange(o.ahead_, 0)) {}
  PodMemory& operator=(PodMemory&& o) noexcept {
    if (this != &o) {
      if (p_) release();
      p_ = std::exchange(o.p_, nullptr), map_bytes_ = std::exchange(o.map_bytes_, 0),
      ahead_ = std::exchange(o.ahead_, 0);
    }
    return *this;
  }
  ~PodMemory() {
    if (p_) release();
  }

  void* data() const { return p_; }
  /// In a mapping (Linux builds, from 64 KiB): look_ahead() then sets where a writer stops next.
  bool mapped() const { return map_bytes_ != 0; }
  /// Makes room for at least `bytes`, keeping the first `used`: returns the room it now has (a
  /// mapping's is whole pages). Throws std::bad_alloc, leaving the memory as it was.
  size_t grow(size_t bytes, size_t used);
  /// For a mapping whose writer is at byte `at`: requests the pages it will write next from
  /// prefault, and returns the byte offset at which to ask again.
  size_t look_ahead(size_t at);
  /// Gives the pages past the first `used` bytes back to the system.
  void trim(size_t used);

 private:
  void release() noexcept;

  void* p_ = nullptr;
  size_t map_bytes_ = 0;  // the mapping's length, or 0 while the memory is on the heap
  size_t ahead_ = 0;      // bytes of the mapping requested from prefault (or known touched)
};

template <class T>
class PodBuffer {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  PodBuffer() = default;
  PodBuffer(PodBuffer&& o) noexcept { *this = std::move(o); }
  PodBuffer& operator=(PodBuffer&& o) noexcept {
    if (this != &o) {
      mem_ = std::move(o.mem_);
      n_ = std::exchange(o.n_, 0), cap_ = std::exchange(o.cap_, 0), limit_ = std::exchange(o.limit_, 0);
    }
    return *this;
  }

  /// An explicit copy (copying is deliberate: the type is meant for large arrays).
  PodBuffer clone() const {
    PodBuffer c;
    if (n_) {
      c.grow_to(n_);
      std::memcpy(c.data(), data(), n_ * sizeof(T));
      c.n_ = n_;
    }
    return c;
  }
  void clear() { n_ = 0; }
  T* begin() { return data(); }
  T* end() { return data() + n_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + n_; }
  size_t size() const { return n_; }
  size_t capacity() const { return cap_; }
  T* data() { return static_cast<T*>(mem_.data()); }
  const T* data() const { return static_cast<const T*>(mem_.data()); }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }

  void reserve(size_t n) {
    if (n > cap_) grow_to(n);
  }
  void push_back(const T& v) {
    if (n_ >= limit_) [[unlikely]]
      at_limit();
    data()[n_++] = v;
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
  void trim() { mem_.trim(n_ * sizeof(T)); }

 private:
  void grow_to(size_t n) {
    if (n != 0 && n * sizeof(T) / n != sizeof(T)) throw std::bad_alloc();
    cap_ = mem_.grow(n * sizeof(T), n_ * sizeof(T)) / sizeof(T);
    limit_ = cap_;
    if (mem_.mapped()) look_ahead();
  }
  // push_back has reached limit_: the end of the capacity, or a point in a mapping where the
  // pages ahead are to be requested. Leaves room for one more element.
  void at_limit() {
    if (n_ == cap_)
      grow_to(cap_ ? cap_ * 2 : 64);  // looks ahead itself
    else if (mem_.mapped())
      look_ahead();
    else
      limit_ = cap_;
  }
  void look_ahead() { limit_ = std::min(cap_, mem_.look_ahead(n_ * sizeof(T)) / sizeof(T)); }

  PodMemory mem_;
  size_t n_ = 0, cap_ = 0;
  size_t limit_ = 0;  // push_back's slow path runs from here: cap_, or sooner in a mapping
};

}  // namespace memsnap::util
