#include "memsnap/util/prefault.hpp"

#include <sys/mman.h>

#include "memsnap/util/memory_mode.hpp"
#if MEMSNAP_PORTABLE_MEMORY

// A portable build (memory_mode.hpp) has no prefault worker: arrays are heap blocks, and
// only the input file's mapping is given to unmap_later.
namespace memsnap::util {
bool prefault_enabled() {
  return false;
}
void prefault(void*, size_t) {}
void pause_prefault(bool) {}
void unmap_later(void* begin, size_t bytes) {
  if (bytes) munmap(begin, bytes);
}
void forget_prefault(void*, size_t) {}
}  // namespace memsnap::util

#else

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>

namespace memsnap::util {

namespace {

class Prefaulter {
 public:
  void add(char* b, char* e) {
    std::lock_guard lock(mu_);
    if (paused_ || !start()) return;
    queue_.push_back({b, e});
    wake_.notify_one();
  }
  // False when the process has no thread to spare: the caller unmaps the range itself.
  bool unmap(char* b, char* e) {
    std::lock_guard lock(mu_);
    if (!start()) return false;
    unmaps_.push_back({b, e});
    wake_.notify_one();
    return true;
  }
  void pause(bool on) {
    std::lock_guard lock(mu_);
    paused_ += on ? 1 : -1;
    if (paused_) queue_.clear();  // hints: the writers fault their own pages
  }
  void forget(char* b, char* e) {
    std::unique_lock lock(mu_);
    std::erase_if(queue_, [&](const Range& r) { return r.b < e && b < r.e; });
    done_.wait(lock, [&] { return !(busy_.b < e && b < busy_.e); });
  }

 private:
  struct Range {
    char* b = nullptr;
    char* e = nullptr;
  };
  static constexpr size_t kStep = size_t{2} << 20;  // one huge page: forget() waits for at most this much

  // Under mu_: starts the worker on first use; whether it runs.
  bool start() {
    if (!started_) {
      started_ = true;
      try {
        std::thread([this] { work(); }).detach();  // lives as long as the process: see instance()
        running_ = true;
      } catch (const std::system_error&) {
        // No thread to be had (a process limit): the writer faults its own pages, as before.
      }
    }
    return running_;
  }

  // The worker thread: populates the queued ranges a step at a time, and unmaps what is given up.
  void work();

  std::mutex mu_;
  std::condition_variable wake_, done_;
  std::deque<Range> queue_;
  std::deque<Range> unmaps_;  // mappings given up (unmap_later), unmapped when nothing is to populate
  Range busy_;                // the step being populated, unlocked
  int paused_ = 0;            // AllCoresBusy scopes alive
  bool started_ = false;
  bool running_ = false;  // the worker exists
};

void Prefaulter::work() {
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return !queue_.empty() || !unmaps_.empty(); });
    // Populating first, as a parse is waiting for those pages; but a second mapping given
    // up (fleet reads file after file) is unmapped at once, so they do not pile up.
    if (queue_.empty() || unmaps_.size() > 1) {
      Range u = unmaps_.front();
      unmaps_.pop_front();
      lock.unlock();
      munmap(u.b, static_cast<size_t>(u.e - u.b));
      lock.lock();
      continue;
    }
    Range& r = queue_.front();
    busy_ = {r.b, r.b + std::min<size_t>(kStep, static_cast<size_t>(r.e - r.b))};
    r.b = busy_.e;
    if (r.b == r.e) queue_.pop_front();
    lock.unlock();
#ifdef MADV_POPULATE_WRITE
    madvise(busy_.b, static_cast<size_t>(busy_.e - busy_.b), MADV_POPULATE_WRITE);  // a hint: errors ignored
#endif
    lock.lock();
    busy_ = {};
    done_.notify_all();
  }
}

// Never destroyed: buffers freed by static destructors at exit may still call forget(), and
// the worker thread may be waiting on it when the process ends.
Prefaulter* instance() {
  static Prefaulter* p = std::thread::hardware_concurrency() > 1 ? new Prefaulter : nullptr;
  return p;
}

}  // namespace

bool prefault_enabled() {
  return instance() != nullptr;
}

void prefault(void* begin, size_t bytes) {
  if (Prefaulter* p = instance(); p && bytes) p->add(static_cast<char*>(begin), static_cast<char*>(begin) + bytes);
}

void pause_prefault(bool on) {
  if (Prefaulter* p = instance()) p->pause(on);
}

void unmap_later(void* begin, size_t bytes) {
  if (!bytes) return;
  Prefaulter* p = instance();
  if (!p || !p->unmap(static_cast<char*>(begin), static_cast<char*>(begin) + bytes)) munmap(begin, bytes);
}

void forget_prefault(void* begin, size_t bytes) {
  if (Prefaulter* p = instance(); p && bytes) p->forget(static_cast<char*>(begin), static_cast<char*>(begin) + bytes);
}

}  // namespace memsnap::util

#endif  // MEMSNAP_PORTABLE_MEMORY
