// A random-access iterator over a container that hands out values, not references:
// `c[i]` builds the element from columns (a trace event, a live range). Range-for,
// std algorithms and `it->field` work as on a vector; elements cannot be changed
// through it.
#pragma once

#include <compare>
#include <cstddef>
#include <iterator>

namespace memsnap::util {

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
