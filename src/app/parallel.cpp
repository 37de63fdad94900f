// A small ordered work queue for -j N.
#include "memsnap/app/parallel.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace memsnap::app {

unsigned effective_jobs(unsigned jobs) {
  if (jobs > 0) return jobs;
  unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? hw : 1;
}

void run_ordered(size_t n, unsigned jobs, const std::function<void(size_t)>& work,
                 const std::function<void(size_t)>& emit) {
  if (jobs <= 1 || n <= 1) {
    for (size_t i = 0; i < n; ++i) {
      work(i);
      emit(i);
    }
    return;
  }
  std::mutex m;
  std::condition_variable cv;
  std::vector<char> done(n, 0);
  std::vector<std::exception_ptr> errors(n);
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  auto worker = [&] {
    for (;;) {
      size_t i = next.fetch_add(1);
      if (i >= n || stop.load()) return;
      try {
        work(i);
      } catch (...) {
        errors[i] = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(m);
        done[i] = 1;
      }
      cv.notify_all();
    }
  };
  std::vector<std::thread> threads;
  size_t count = std::min<size_t>(jobs, n);
  for (size_t t = 0; t < count; ++t) threads.emplace_back(worker);
  std::exception_ptr first;
  for (size_t i = 0; i < n && !first; ++i) {
    {
      std::unique_lock<std::mutex> lock(m);
      cv.wait(lock, [&] { return done[i] != 0; });
    }
    if (errors[i]) {
      first = errors[i];
      break;
    }
    try {
      emit(i);
    } catch (...) {
      first = std::current_exception();
    }
  }
  if (first) stop = true;
  for (auto& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace memsnap::app
