// Which memory machinery the build uses (see pod_buffer.hpp and prefault.hpp), and its
// one primitive that several layers use: a huge-page mapping (memory_mode.cpp).
//
// Linux (the default there): large arrays in their own 2 MiB-aligned mappings grown by
// mremap(MREMAP_FIXED), MADV_HUGEPAGE, a prefault worker on the second core, read-ahead
// windows whose pages move. Portable (MEMSNAP_PORTABLE_MEMORY=1: the CMake option of that name,
// and the default on every other system): plain malloc/calloc/realloc and free, no prefault,
// no page moves; only POSIX mmap of the input file remains. Same results, less speed; CI
// builds and tests both.
//
// Only the files that implement the machinery read the macro (memory_mode.cpp, pod_buffer.cpp,
// prefault.cpp, io/read_ahead.cpp: CMake defines it on those four sources alone), so flipping
// the option rebuilds four files; everything else asks portable_memory() at run time.
#pragma once

#include <sys/mman.h>

#include <cstddef>

#ifndef MEMSNAP_PORTABLE_MEMORY
#if defined(__linux__)
#define MEMSNAP_PORTABLE_MEMORY 0
#else
#define MEMSNAP_PORTABLE_MEMORY 1
#endif
#endif

#ifndef MAP_NORESERVE
#define MAP_NORESERVE 0  // a hint where it exists: untouched pages of a reservation cost nothing
#endif

namespace memsnap::util {
/// True in a portable build: the memory machinery this binary was linked with (the answer of
/// memory_mode.cpp, compiled with the build's choice, not of the including file).
bool portable_memory();
/// One huge page: what map_huge_aligned aligns to and what PodBuffer's mappings are made of.
inline constexpr size_t kHugePage = size_t{2} << 20;

/// A fresh read-write anonymous mapping of `bytes` (a multiple of 2 MiB) starting on a
/// 2 MiB boundary and advised MADV_HUGEPAGE; nullptr when it cannot be made. `flags` are
/// added to mmap's (MAP_NORESERVE for a reservation that is mostly never touched). Give it back
/// with unmap_huge. In a portable build: zeroed heap memory (calloc), without the alignment.
void* map_huge_aligned(size_t bytes, int flags = 0);
void unmap_huge(void* p, size_t bytes);
}  // namespace memsnap::util
