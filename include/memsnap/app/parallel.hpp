// Many files at once (-j N): one file per worker, results handed back in argument order.
#pragma once

#include <cstddef>
#include <functional>

namespace memsnap::app {

/// `jobs`, or the number of hardware threads when it is 0 (at least 1).
unsigned effective_jobs(unsigned jobs);

/// Runs work(i) for every i in [0, n) on at most `jobs` threads, one item per worker at
/// a time, and emit(i) on the calling thread in index order, each as soon as item i and
/// every item before it are done. Whatever work(i) keeps for emit(i) is all that outlives
/// it, so at most `jobs` items are being worked on (loaded) at any moment. An exception
/// from work(i) or emit(i) stops the run once item i's turn comes, and is rethrown after
/// every worker has finished.
void run_ordered(size_t n, unsigned jobs, const std::function<void(size_t)>& work,
                 const std::function<void(size_t)>& emit);

}  // namespace memsnap::app
