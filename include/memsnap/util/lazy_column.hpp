// A column that costs nothing while every value in it is the same. Many trace columns
// are constant in real files: the stack of every event of a snapshot recorded without
// stacks, the stream of a single-stream job, the upper half of addresses on a device
// whose memory lies in one 4 GiB region. Such a column keeps one value and a count until
// the first different value arrives; only then does it become a PodBuffer (filled with
// the constant up to that point) and grow like one.
#pragma once

#include <algorithm>
#include <cstddef>

#include "memsnap/util/pod_buffer.hpp"

namespace memsnap::util {

template <class T>
class LazyColumn {
 public:
  LazyColumn() = default;
  LazyColumn(LazyColumn&&) noexcept = default;
  LazyColumn& operator=(LazyColumn&&) noexcept = default;

  LazyColumn clone() const {
    LazyColumn c;
    c.v_ = v_.clone();
    c.fill_ = fill_;
    c.n_ = n_;
    c.dense_ = dense_;
    return c;
  }

  size_t size() const { return dense_ ? v_.size() : n_; }
  /// True once two different values have been stored.
  bool dense() const { return dense_; }
  T operator[](size_t i) const { return dense_ ? v_[i] : fill_; }

  void push_back(T x) {
    if (dense_) [[likely]] {
      v_.push_back(x);
      return;
    }
    if (n_ == 0) fill_ = x;
    if (x == fill_) {
      ++n_;
      return;
    }
    densify();
    v_.push_back(x);
  }
  /// Appends f(x) for each value x of src, as push_back would, in one pass: the column
  /// stays constant while the values are, and dense rows are written without a check each.
  template <class F>
  void append(const LazyColumn& src, F f) {
    size_t m = src.size(), j = 0;
    if (m == 0) return;
    if (!src.dense_ && !dense_) {
      T x = f(src.fill_);
      if (n_ == 0 || x == fill_) {
        fill_ = x;
        n_ += m;
        return;
      }
    }
    for (; j < m && !dense_; ++j) push_back(f(src[j]));
    if (j == m) return;
    size_t n = v_.size();
    v_.resize_uninitialized(n + (m - j));
    T* d = v_.data() + n;
    if (src.dense_)
      for (const T* s = src.v_.data() + j; j < m; ++j) *d++ = f(*s++);
    else
      std::fill_n(d, m - j, f(src.fill_));
  }
  void append(const LazyColumn& src) {
    append(src, [](T x) { return x; });
  }
  /// Replaces every value x by f(x).
  template <class F>
  void transform(F f) {
    if (!dense_) {
      fill_ = f(fill_);
      return;
    }
    for (T& x : v_) x = f(x);
  }
  void reserve(size_t n) {
    if (dense_) v_.reserve(n);
  }
  void trim() { v_.trim(); }
  size_t memory_bytes() const { return v_.capacity() * sizeof(T); }

 private:
  void densify() {
    v_.resize_uninitialized(n_);
    for (size_t i = 0; i < n_; ++i) v_[i] = fill_;
    dense_ = true;
  }

  PodBuffer<T> v_;
  T fill_{};
  size_t n_ = 0;  // values stored while constant
  bool dense_ = false;
};

}  // namespace memsnap::util
