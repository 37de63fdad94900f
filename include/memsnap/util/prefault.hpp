// Faults in anonymous pages on the second core shortly before the parse first writes them.
//
// Why: on the benchmark machine (a VM) the first touch of a page the process has never had
// costs far more than the kernel's zeroing: the hypervisor backs it on that fault. Measured
// with a 256 MiB MADV_HUGEPAGE mapping touched page by page: 0.3 to 1 GB/s in a fresh
// process, 16 GB/s when the same process maps and touches it a second time. A 1 GB
// `analyze` first-touches about 240 MB, and perf put such faults (clear_page_erms under
// Trace::push_back and Memo::put) at 18% of its CPU time, all on the parsing thread while
// the second core idled.
//
// A request names a range of a private anonymous read-write mapping; a worker thread,
// started on the first request, populates it (MADV_POPULATE_WRITE: the pages are faulted in
// zero-filled, their contents are not written) one 2 MiB step at a time, lowest address
// first. A page the owner has already written is left as it is. Before unmapping or moving
// a mapping, its owner calls forget() with the mapping's range: forget() drops the queued
// requests inside it and waits for a step in progress there, so no request ever reaches
// memory that has changed hands. Everything here is a hint: a failed populate only costs
// the speed it was meant to win.
#pragma once

#include <cstddef>

namespace memsnap::util {

/// Populates [begin, begin + bytes) of an anonymous mapping the caller owns, on another core
/// if the machine has one (otherwise does nothing). Returns at once.
void prefault(void* begin, size_t bytes);

/// True when prefault() does its work: the machine has more than one core.
bool prefault_enabled();

// While a util::AllCoresBusy scope lives (cores.hpp), prefault() does nothing and the queued
// requests are dropped: the process's own threads keep every core busy. There the worker only
// takes a core from a thread that would fault the same pages itself, and a writer that moves
// an array can wait in forget_prefault() for a worker the scheduler has not run. Whole runs on
// the 114 MB and 1 GB bench files, side by side, took 0.98x and 0.96x the time with the pause.

/// Called by each AllCoresBusy scope (cores.cpp) as it begins (`on`) and as it ends.
void pause_prefault(bool on);

/// Unmaps [begin, begin + bytes), a whole mapping the caller gives up and never touches
/// again, on the worker when it is idle (else here). Why: tearing down a large file's page
/// table costs about 45 ms per GB on the benchmark machine, and the analysis need not wait
/// for it.
void unmap_later(void* begin, size_t bytes);

/// Drops the requests inside [begin, begin + bytes) and returns when none of them is being
/// carried out. Call before munmap or mremap of a range given to prefault().
void forget_prefault(void* begin, size_t bytes);

}  // namespace memsnap::util
