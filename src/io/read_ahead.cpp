#include "memsnap/io/read_ahead.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

namespace memsnap::io {

std::unique_ptr<ReadAhead> ReadAhead::start(int fd, uint64_t offset, uint64_t size, size_t chunk) {
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  if (fd < 0 || size == 0 || size > (uint64_t{1} << 46) || chunk == 0 || chunk % page || (chunk & (chunk - 1)))
    return nullptr;
  std::unique_ptr<ReadAhead> r(new ReadAhead);
  r->fd_ = fd;
  r->offset_ = offset;
  r->size_ = size;
  r->chunk_ = chunk;
  size_t chunks = size_t((size + chunk - 1) / chunk);
  r->map_len_ = (chunks + 1) * chunk;
  void* m = mmap(nullptr, r->map_len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return nullptr;
  r->map_ = m;
  r->moved_.assign(chunks, 0);
  r->base_ = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(m) + chunk - 1) & ~uintptr_t(chunk - 1));
  if (chunk % kChunk == 0) madvise(r->base_, chunks * chunk, MADV_HUGEPAGE);  // a hint: 4 KiB pages work too
  try {
    r->thread_ = std::thread([p = r.get()] { p->run(); });
  } catch (const std::system_error&) {
    return nullptr;  // no thread to be had: the caller reads the mapping
  }
  return r;
}

ReadAhead::~ReadAhead() {
  close();
}

void ReadAhead::close() {
  {
    std::lock_guard lock(m_);
    cancel_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  if (!map_) return;
  // The ranges the moves left are no longer ours: the kernel may have placed another mapping
  // there since. Unmap the rest, run by run.
  auto* end = static_cast<uint8_t*>(map_) + map_len_;
  uint8_t* from = static_cast<uint8_t*>(map_);
  for (size_t k = 0; k <= moved_.size(); ++k) {
    uint8_t* chunk = base_ + k * chunk_;
    if (k == moved_.size() || moved_[k]) {
      uint8_t* to = k == moved_.size() ? end : chunk;
      if (to > from) munmap(from, size_t(to - from));
      from = chunk + chunk_;
    }
  }
  map_ = nullptr;
  base_ = nullptr;
  ready_.store(0);
}

void ReadAhead::run() {
  size_t chunks = size_t((size_ + chunk_ - 1) / chunk_);
  for (size_t k = 0; k < chunks; ++k) {
    uint8_t* dst = base_ + k * chunk_;
    if (k >= kChunks) {
      std::unique_lock lock(m_);
      cv_.wait(lock, [&] { return cancel_ || released_ / chunk_ > k - kChunks; });
      if (cancel_) break;
      lock.unlock();
      // The pages of a chunk the reader is done with become the next chunk's. Should the move
      // fail, the read below faults in fresh pages there instead.
      if (mremap(base_ + (k - kChunks) * chunk_, chunk_, chunk_, MREMAP_MAYMOVE | MREMAP_FIXED, dst) != MAP_FAILED)
        moved_[k - kChunks] = 1;
    }
    size_t want = size_t(std::min<uint64_t>(chunk_, size_ - uint64_t(k) * chunk_));
    size_t got = 0;
    while (got < want) {
      ssize_t n = pread(fd_, dst + got, want - got, off_t(offset_ + uint64_t(k) * chunk_ + got));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;  // an error, or the file shrank: the parse ends short
      got += size_t(n);
    }
    {
      std::lock_guard lock(m_);
      ready_.store(k * chunk_ + got, std::memory_order_release);
      if (cancel_) break;
    }
    cv_.notify_all();
    if (got < want) break;
  }
  {
    std::lock_guard lock(m_);
    done_ = true;
  }
  cv_.notify_all();
}

size_t ReadAhead::wait_for(size_t n) {
  size_t r = ready_.load(std::memory_order_acquire);
  if (r >= n) return r;
  std::unique_lock lock(m_);
  n = size_t(std::min<uint64_t>(n, size_));
  size_t reachable = (released_ / chunk_ + kChunks) * chunk_;  // the most the window can hold now
  if (n > reachable) return ready_.load(std::memory_order_acquire);
  cv_.wait(lock, [&] { return done_ || ready_.load(std::memory_order_acquire) >= n; });
  return ready_.load(std::memory_order_acquire);
}

void ReadAhead::release_before(size_t n) {
  {
    std::lock_guard lock(m_);
    if (n / chunk_ <= released_ / chunk_) return;
    released_ = n;
  }
  cv_.notify_all();
}

}  // namespace memsnap::io
