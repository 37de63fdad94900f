// util::prefault populates pages on another core; forget_prefault guarantees that none of a
// range's requests runs after it returns, so an owner can unmap and the address be reused.
#include <doctest/doctest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <thread>
#include <vector>

#include "memsnap/util/memory_mode.hpp"
#include "memsnap/util/pod_buffer.hpp"
#include "memsnap/util/prefault.hpp"

namespace {

constexpr size_t kBytes = size_t{64} << 20;

size_t resident_pages(void* p, size_t bytes) {
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> v((bytes + page - 1) / page);
  REQUIRE(mincore(p, bytes, v.data()) == 0);
  size_t n = 0;
  for (unsigned char c : v) n += c & 1;
  return n;
}

void* fresh(void* at = nullptr) {
  int fixed = at ? MAP_FIXED : 0;
  void* p = mmap(at, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | fixed, -1, 0);
  REQUIRE(p != MAP_FAILED);
  return p;
}

// One core, or a portable build (memory_mode.hpp): the only states where prefault is off.
bool off_by_design() {
  return memsnap::util::portable_memory() || std::thread::hardware_concurrency() <= 1;
}

}  // namespace

TEST_CASE("prefault runs exactly where the build and the machine allow it") {
  CHECK(memsnap::util::prefault_enabled() == !off_by_design());
}

TEST_CASE("prefault populates a range on another core") {
  if (!memsnap::util::prefault_enabled()) {
    CHECK(off_by_design());
    return;
  }
  void* p = fresh();
  REQUIRE(resident_pages(p, kBytes) == 0);
  memsnap::util::prefault(p, kBytes);
  size_t all = kBytes / static_cast<size_t>(sysconf(_SC_PAGESIZE));
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (resident_pages(p, kBytes) < all && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  CHECK(resident_pages(p, kBytes) == all);
  for (size_t i = 0; i < kBytes; i += 4096) REQUIRE(static_cast<unsigned char*>(p)[i] == 0);  // zero-filled
  memsnap::util::forget_prefault(p, kBytes);
  munmap(p, kBytes);
}

TEST_CASE("after forget_prefault no request reaches the range, even when its address is reused") {
  if (!memsnap::util::prefault_enabled()) {
    CHECK(off_by_design());
    return;
  }
  for (int round = 0; round < 5; ++round) {
    void* p = fresh();
    memsnap::util::prefault(p, kBytes);
    memsnap::util::forget_prefault(p, kBytes);
    munmap(p, kBytes);
    void* q = fresh(p);                                           // the same addresses, no pages yet
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // time for a forgotten request to run
    CHECK(resident_pages(q, kBytes) == 0);
    munmap(q, kBytes);
  }
}

TEST_CASE("a mapped PodBuffer stays exact when push_back follows resize_uninitialized past its look-ahead") {
  memsnap::util::PodBuffer<uint32_t> b;
  for (uint32_t i = 0; i < 600'000; ++i) b.push_back(i);  // mapped, looking ahead
  b.resize_uninitialized(2'000'000);                      // past the page push_back expects
  for (uint32_t i = 600'000; i < 2'000'000; ++i) b[i] = i;
  for (uint32_t i = 2'000'000; i < 5'000'000; ++i) b.push_back(i);
  REQUIRE(b.size() == 5'000'000);
  size_t bad = 0;
  for (uint32_t i = 0; i < 5'000'000; ++i) bad += b[i] != i;
  CHECK(bad == 0);
}

TEST_CASE("unmap_later unmaps each mapping it is given, also while pages are being populated") {
  auto mapped = [](void* p) {  // mincore fails with ENOMEM on an unmapped range
    unsigned char v[1];
    return mincore(p, 4096, v) == 0;
  };
  void* busy = fresh();  // a long populate keeps the worker busy
  memsnap::util::prefault(busy, kBytes);
  std::vector<void*> given;
  for (int i = 0; i < 3; ++i) {
    void* p = fresh();
    static_cast<unsigned char*>(p)[0] = 1;
    REQUIRE(mapped(p));
    memsnap::util::unmap_later(p, kBytes);
    given.push_back(p);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  auto any_mapped = [&] {
    for (void* p : given)
      if (mapped(p)) return true;
    return false;
  };
  while (any_mapped() && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  for (void* p : given) CHECK_FALSE(mapped(p));
  memsnap::util::forget_prefault(busy, kBytes);
  munmap(busy, kBytes);
}
