// A growable array of trivially copyable values: no zero-fill on growth, realloc
// (mremap for large blocks) instead of allocate-copy-free, so growth never holds two copies.
#pragma once

#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>

namespace memsnap::util {

template <class T>
class PodBuffer {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  PodBuffer() = default;
  PodBuffer(const PodBuffer&) = delete;
  PodBuffer& operator=(const PodBuffer&) = delete;
  PodBuffer(PodBuffer&& o) noexcept : p_(o.p_), n_(o.n_), cap_(o.cap_) { o.p_ = nullptr, o.n_ = o.cap_ = 0; }
  PodBuffer& operator=(PodBuffer&& o) noexcept {
    if (this != &o) {
      std::free(p_);
      p_ = o.p_, n_ = o.n_, cap_ = o.cap_;
      o.p_ = nullptr, o.n_ = o.cap_ = 0;
    }
    return *this;
  }
  ~PodBuffer() { std::free(p_); }

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
    if (n_ == cap_) [[unlikely]]
      grow_to(cap_ ? cap_ * 2 : 64);
    p_[n_++] = v;
  }
  /// New elements are left uninitialised: the caller writes them.
  void resize_uninitialized(size_t n) {
    if (n > cap_) grow_to(n > cap_ * 2 ? n : cap_ * 2);
    n_ = n;
  }
  void truncate(size_t n) { n_ = n; }

 private:
  void grow_to(size_t n) {
    void* q = std::realloc(p_, n * sizeof(T));
    if (q == nullptr) throw std::bad_alloc();
    p_ = static_cast<T*>(q);
    cap_ = n;
  }

  T* p_ = nullptr;
  size_t n_ = 0;
  size_t cap_ = 0;
};

}  // namespace memsnap::util
