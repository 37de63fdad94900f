// Columns: what the trace's table is made of, and the iterator that reads a table of
// columns row by row.
//
// LazyColumn: a column that costs nothing while every value in it is the same. Many trace
// columns are constant in real files: the stack of every event of a snapshot recorded
// without stacks, the stream of a single-stream job, the upper half of addresses on a
// device whose memory lies in one 4 GiB region. Such a column keeps one value and a count
// until the first different value arrives; only then does it become a PodBuffer (filled
// with the constant up to that point) and grow like one.
//
// DictColumn: a column of values with few distinct ones: each is stored as a 2-byte index
// into a table of the distinct values (no space at all while the column is constant: a
// LazyColumn), the table searched linearly while short and through a seeded hash after. A
// column that meets more than 65,535 distinct values keeps the values themselves from then
// on (filled in for the earlier rows), so no input is refused. The trace uses it for
// streams and for the upper halves of addresses.
//
// Both keep inline what runs per row, as PodBuffer does; the switch each makes once in its
// life (LazyColumn::densify, DictColumn::widen) is in columns.cpp, compiled there for the
// value types memsnap stores (a column of another type fails to link: add it there).
//
// IndexIterator: a random-access iterator over a container that hands out values, not
// references: `c[i]` builds the element from columns (a trace event, a live range).
// Range-for, std algorithms and `it->field` work as on a vector; elements cannot be
// changed through it.
#pragma once

#include <algorithm>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <unordered_map>
#include <vector>

#include "memsnap/util/hash.hpp"
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
  // The constant column becomes a PodBuffer holding it n_ times (columns.cpp).
  void densify();

  PodBuffer<T> v_;
  T fill_{};
  size_t n_ = 0;  // values stored while constant
  bool dense_ = false;
};

template <class W>
class DictColumn {
 public:
  DictColumn() = default;
  DictColumn(DictColumn&&) noexcept = default;
  DictColumn& operator=(DictColumn&&) noexcept = default;

  DictColumn clone() const {
    DictColumn c;
    c.index_ = index_.clone();
    c.values_ = values_.clone();
    c.table_ = table_;
    c.ids_ = ids_;
    c.wide_ = wide_;
    return c;
  }

  size_t size() const { return wide_ ? values_.size() : index_.size(); }
  W operator[](size_t i) const { return wide_ ? values_[i] : table_[index_[i]]; }
  /// True once the column stores values rather than indices.
  bool wide() const { return wide_; }

  void push_back(W v) {
    if (wide_) {
      values_.push_back(v);
      return;
    }
    uint16_t k = intern(v);
    if (k != kFull) {
      index_.push_back(k);
      return;
    }
    widen();
    values_.push_back(v);
  }
  /// Appends src's rows, as push_back would row by row: src's distinct values are looked up
  /// here once each (new ones join the table in the order of their first row, as row by row),
  /// and its rows' indices are translated, or copied when the codes agree.
  void append(const DictColumn& src) {
    size_t m = src.size();
    if (!wide_ && !src.wide_) {
      std::vector<uint16_t> code(src.table_.size());
      bool same = true;
      size_t k = 0;
      for (; k < src.table_.size(); ++k) {
        uint16_t c = intern(src.table_[k]);
        if (c == kFull) break;  // the table is full: the rows below widen the column
        code[k] = c;
        same = same && c == k;
      }
      if (k == src.table_.size()) {
        if (same)
          index_.append(src.index_);
        else
          index_.append(src.index_, [&](uint16_t x) { return code[x]; });
        return;
      }
    }
    for (size_t j = 0; j < m; ++j) push_back(src[j]);
  }
  void reserve(size_t n) { wide_ ? values_.reserve(n) : index_.reserve(n); }
  void trim() { wide_ ? values_.trim() : index_.trim(); }
  size_t memory_bytes() const {
    return index_.memory_bytes() + values_.capacity() * sizeof(W) + table_.capacity() * sizeof(W) + ids_.size() * 32;
  }

 private:
  static constexpr uint16_t kFull = 0xFFFF;  // not an index: the table holds 65,535 values
  // The table is full: the column keeps the values themselves, the earlier rows' decoded
  // (columns.cpp).
  void widen();
  uint16_t intern(W v) {
    if (!table_.empty() && table_.back() == v) return static_cast<uint16_t>(table_.size() - 1);
    if (table_.size() < 8) {
      for (size_t k = 0; k < table_.size(); ++k)
        if (table_[k] == v) return static_cast<uint16_t>(k);
    } else if (auto it = ids_.find(v); it != ids_.end()) {
      return it->second;
    }
    if (table_.size() >= kFull) return kFull;
    auto k = static_cast<uint16_t>(table_.size());
    table_.push_back(v);
    if (table_.size() == 8)
      for (size_t j = 0; j < table_.size(); ++j) ids_.emplace(table_[j], static_cast<uint16_t>(j));
    else if (table_.size() > 8)
      ids_.emplace(v, k);
    return k;
  }

  LazyColumn<uint16_t> index_;
  PodBuffer<W> values_;
  std::vector<W> table_;
  std::unordered_map<W, uint16_t, Hasher> ids_;
  bool wide_ = false;
};

template <class C, class V>
class IndexIterator {
 public:
  using iterator_category = std::random_access_iterator_tag;
  using value_type = V;
  using difference_type = std::ptrdiff_t;
  using reference = V;
  struct Arrow {
    V v;
    const V* operator->() const { return &v; }
  };
  using pointer = Arrow;

  IndexIterator() = default;
  IndexIterator(const C* c, size_t i) : c_(c), i_(i) {}
  V operator*() const { return (*c_)[i_]; }
  Arrow operator->() const { return Arrow{(*c_)[i_]}; }
  V operator[](difference_type n) const { return (*c_)[i_ + static_cast<size_t>(n)]; }
  IndexIterator& operator++() { return ++i_, *this; }
  IndexIterator operator++(int) {
    IndexIterator o = *this;
    ++i_;
    return o;
  }
  IndexIterator& operator--() { return --i_, *this; }
  IndexIterator operator--(int) {
    IndexIterator o = *this;
    --i_;
    return o;
  }
  IndexIterator& operator+=(difference_type n) { return i_ += static_cast<size_t>(n), *this; }
  IndexIterator& operator-=(difference_type n) { return i_ -= static_cast<size_t>(n), *this; }
  friend IndexIterator operator+(IndexIterator a, difference_type n) { return a += n; }
  friend IndexIterator operator+(difference_type n, IndexIterator a) { return a += n; }
  friend IndexIterator operator-(IndexIterator a, difference_type n) { return a -= n; }
  friend difference_type operator-(IndexIterator a, IndexIterator b) {
    return static_cast<difference_type>(a.i_ - b.i_);
  }
  friend bool operator==(IndexIterator a, IndexIterator b) { return a.i_ == b.i_; }
  friend auto operator<=>(IndexIterator a, IndexIterator b) { return a.i_ <=> b.i_; }
  /// The element's index in its container.
  size_t index() const { return i_; }

 private:
  const C* c_ = nullptr;
  size_t i_ = 0;
};

}  // namespace memsnap::util
