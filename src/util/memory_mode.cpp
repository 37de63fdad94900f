// The huge-page mapping (memory_mode.hpp): 2 MiB-aligned and advised MADV_HUGEPAGE on Linux,
// zeroed heap memory in a portable build.
#include "memsnap/util/memory_mode.hpp"

#include <cstdint>
#include <cstdlib>

namespace memsnap::util {

bool portable_memory() {
  return MEMSNAP_PORTABLE_MEMORY != 0;
}

#if MEMSNAP_PORTABLE_MEMORY

void* map_huge_aligned(size_t bytes, int) {
  return std::calloc(1, bytes);
}

void unmap_huge(void* p, size_t) {
  std::free(p);
}

#else

void unmap_huge(void* p, size_t bytes) {
  munmap(p, bytes);
}

void* map_huge_aligned(size_t bytes, int flags) {
  size_t span = bytes + kHugePage;
  void* m = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  auto base = reinterpret_cast<uintptr_t>(m);
  uintptr_t start = (base + kHugePage - 1) & ~uintptr_t(kHugePage - 1);
  if (start > base) munmap(m, start - base);
  if (base + span > start + bytes) munmap(reinterpret_cast<void*>(start + bytes), base + span - (start + bytes));
  void* q = reinterpret_cast<void*>(start);
#ifdef MADV_HUGEPAGE
  madvise(q, bytes, MADV_HUGEPAGE);  // a hint: failure only costs speed
#endif
  return q;
}

#endif  // MEMSNAP_PORTABLE_MEMORY

}  // namespace memsnap::util
