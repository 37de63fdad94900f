// PodBuffer: contents survive every growth (heap, heap to a mapping of small pages, that
// mapping grown by mremap, small pages to huge ones, huge to a larger aligned mapping), moves and explicit copies, for
// element sizes that do and do not divide the 2 MiB mapping unit.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "memsnap/util/pod_buffer.hpp"

using memsnap::util::PodBuffer;

namespace {

struct Odd {  // 56 bytes, like LiveRange: 2 MiB is not a whole number of them
  uint64_t v[7];
};

template <class T>
T make(size_t i) {
  T t{};
  if constexpr (std::is_same_v<T, Odd>) {
    for (uint64_t& x : t.v) x = i * 0x9E3779B97F4A7C15ull;
  } else {
    t = static_cast<T>(i * 2654435761u);
  }
  return t;
}

template <class T>
bool same(const T& a, const T& b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

template <class T>
void check_growth(size_t n) {
  PodBuffer<T> b;
  for (size_t i = 0; i < n; ++i) b.push_back(make<T>(i));
  REQUIRE(b.size() == n);
  CHECK(b.capacity() >= n);
  size_t bad = 0;
  for (size_t i = 0; i < n; ++i) bad += !same(b[i], make<T>(i));
  CHECK(bad == 0);
  PodBuffer<T> moved = std::move(b);
  CHECK(b.size() == 0);
  PodBuffer<T> copy = moved.clone();
  moved = PodBuffer<T>();  // releases the original mapping
  REQUIRE(copy.size() == n);
  bad = 0;
  for (size_t i = 0; i < n; ++i) bad += !same(copy[i], make<T>(i));
  CHECK(bad == 0);
  copy.reserve(copy.capacity() + 1);  // one more growth of a mapped array
  bad = 0;
  for (size_t i = 0; i < n; ++i) bad += !same(copy[i], make<T>(i));
  CHECK(bad == 0);
  copy.trim();  // the pages past the end go; the elements stay, and growth still works
  for (size_t i = n; i < n + n / 2 + 3; ++i) copy.push_back(make<T>(i));
  bad = 0;
  for (size_t i = 0; i < copy.size(); ++i) bad += !same(copy[i], make<T>(i));
  CHECK(bad == 0);
}

}  // namespace

TEST_CASE("PodBuffer keeps its contents across heap and mapped growth") {
  SUBCASE("bytes") {
    check_growth<uint8_t>(9'000'000);
  }
  SUBCASE("64-bit values") {
    check_growth<uint64_t>(1'500'000);
  }
  SUBCASE("56-byte records") {
    check_growth<Odd>(200'000);
  }
  SUBCASE("a mapping of small pages, grown by mremap, never reaching huge pages") {
    check_growth<uint32_t>(100'000);
  }
  SUBCASE("small pages, then huge pages") {
    check_growth<uint32_t>(700'000);
  }
  SUBCASE("small arrays stay small") {
    check_growth<uint32_t>(1000);
  }
}

TEST_CASE("PodBuffer::resize_uninitialized and truncate set the size within capacity") {
  PodBuffer<uint32_t> b;
  b.resize_uninitialized(3'000'000);  // mapped
  for (uint32_t i = 0; i < 3'000'000; ++i) b[i] = i;
  b.truncate(10);
  CHECK(b.size() == 10);
  CHECK(b[9] == 9u);
  b.resize_uninitialized(3'000'001);  // one past capacity or not: the first ten stay
  CHECK(b.size() == 3'000'001);
  CHECK(b[9] == 9u);
}
