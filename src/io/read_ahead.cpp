#include "memsnap/io/read_ahead.hpp"

#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <system_error>

#include "memsnap/util/memory_mode.hpp"

namespace memsnap::io {

namespace {

bool usable(uint64_t size, size_t chunk) {
  size_t page = size_t(sysconf(_SC_PAGESIZE));
  return size != 0 && size <= (uint64_t{1} << 46) && chunk != 0 && chunk % page == 0 && (chunk & (chunk - 1)) == 0;
}

}  // namespace

std::unique_ptr<ReadAhead> ReadAhead::start(int fd, uint64_t offset, uint64_t size, size_t chunk) {
  if (fd < 0 || !usable(size, chunk)) return nullptr;
  std::unique_ptr<ReadAhead> r(new ReadAhead);
  r->fd_ = fd;
  r->offset_ = offset;
  r->size_ = size;
  r->size_hint_ = size;
  r->chunk_ = chunk;
  return r->launch() ? std::move(r) : nullptr;
}

std::unique_ptr<ReadAhead> ReadAhead::start_decoding(Codec codec, std::span<const uint8_t> in, uint64_t limit,
                                                     size_t chunk) {
  if (in.empty() || !usable(limit, chunk)) return nullptr;
  std::unique_ptr<ReadAhead> r(new ReadAhead);
  r->zin_ = in;
  if (codec == Codec::Zstd) {
    r->zctx_ = ZSTD_createDCtx();
    if (r->zctx_ == nullptr) return nullptr;
    unsigned long long declared = ZSTD_getFrameContentSize(in.data(), in.size());
    if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != ZSTD_CONTENTSIZE_ERROR) r->size_hint_ = declared;
  } else {
    auto* z = new z_stream{};
    if (inflateInit2(z, 15 + 32) != Z_OK) {  // 32: a gzip header
      delete z;
      return nullptr;
    }
    r->gz_ = z;
    // A gzip member ends with its size mod 4 GiB: the last member's, a hint like zstd's.
    const uint8_t* t = in.data() + in.size() - std::min<size_t>(in.size(), 4);
    if (in.size() >= 18)
      r->size_hint_ = uint64_t(t[0]) | uint64_t(t[1]) << 8 | uint64_t(t[2]) << 16 | uint64_t(t[3]) << 24;
  }
  r->size_ = limit;
  r->chunk_ = chunk;
  return r->launch() ? std::move(r) : nullptr;
}

ReadAhead::~ReadAhead() {
  close();
  if (zctx_) ZSTD_freeDCtx(zctx_);
  if (gz_) {
    inflateEnd(gz_);
    delete gz_;
  }
}

// Reserves the window's address range (every chunk of size_, plus one for alignment) and
// starts the thread; false when either cannot be had (the caller reads another way).
bool ReadAhead::launch() {
  size_t chunks = size_t((size_ + chunk_ - 1) / chunk_);
  map_len_ = (chunks + 1) * chunk_;
  void* m = mmap(nullptr, map_len_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return false;
  map_ = m;
  moved_.assign(chunks, 0);
  base_ = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(m) + chunk_ - 1) & ~uintptr_t(chunk_ - 1));
#if !MEMSNAP_PORTABLE_MEMORY
  if (chunk_ % kChunk == 0) madvise(base_, chunks * chunk_, MADV_HUGEPAGE);  // a hint: 4 KiB pages work too
#endif
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error&) {
    return false;
  }
  return true;
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
#if MEMSNAP_PORTABLE_MEMORY
      // No page moves here: the chunk the reader is done with is given back, and the read
      // below faults in fresh pages (the window's memory stays as bounded, not as fast).
      if (munmap(base_ + (k - kChunks) * chunk_, chunk_) == 0) moved_[k - kChunks] = 1;
#else
      if (mremap(base_ + (k - kChunks) * chunk_, chunk_, chunk_, MREMAP_MAYMOVE | MREMAP_FIXED, dst) != MAP_FAILED)
        moved_[k - kChunks] = 1;
#endif
    }
    size_t want = size_t(std::min<uint64_t>(chunk_, size_ - uint64_t(k) * chunk_));
    size_t got = fill(dst, want);
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
    // A compressed input that goes on past the limit: not all of it was decoded.
    if ((zctx_ || gz_) && !failed_ && ready_.load() == size_ && !at_end()) failed_ = true;
    done_ = true;
  }
  cv_.notify_all();
}

size_t ReadAhead::fill(uint8_t* dst, size_t want) {
  size_t got = 0;
  if (zctx_ == nullptr && gz_ == nullptr) {  // a file
    while (got < want) {
      ssize_t n = pread(fd_, dst + got, want - got, off_t(offset_ + consumed_.load(std::memory_order_relaxed)));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) failed_ = true;
      if (n <= 0) break;  // an error, or the file shrank: the parse ends short
      got += size_t(n);
      consumed_.fetch_add(uint64_t(n), std::memory_order_relaxed);
    }
    return got;
  }
  if (gz_) return inflate_into(dst, want);
  // Frames may follow one another; the input ends at the end of one, or it was cut short.
  while (got < want && (zin_pos_ < zin_.size() || zlast_ != 0)) {
    ZSTD_inBuffer in{zin_.data(), zin_.size(), zin_pos_};
    ZSTD_outBuffer out{dst, want, got};
    size_t before = zin_pos_, had = got;
    zlast_ = ZSTD_decompressStream(zctx_, &out, &in);
    zin_pos_ = in.pos;
    got = out.pos;
    consumed_.store(zin_pos_, std::memory_order_relaxed);
    // Corrupt, or truncated: no progress short of a frame's end (a call that only finds the
    // end, with no byte to give, is progress).
    if (ZSTD_isError(zlast_) || (zin_pos_ == before && got == had && zlast_ != 0)) {
      failed_ = true;
      break;
    }
  }
  return got;
}

// gzip members may follow one another, as zstd frames may; zlib takes at most 4 GiB a call.
size_t ReadAhead::inflate_into(uint8_t* dst, size_t want) {
  size_t got = 0;
  while (got < want && (zin_pos_ < zin_.size() || zlast_ != 0)) {
    size_t in_now = std::min<size_t>(zin_.size() - zin_pos_, size_t{1} << 30);
    size_t out_now = std::min<size_t>(want - got, size_t{1} << 30);
    gz_->next_in = const_cast<Bytef*>(zin_.data() + zin_pos_);
    gz_->avail_in = static_cast<uInt>(in_now);
    gz_->next_out = dst + got;
    gz_->avail_out = static_cast<uInt>(out_now);
    int rc = inflate(gz_, Z_NO_FLUSH);
    size_t used = in_now - gz_->avail_in, wrote = out_now - gz_->avail_out;
    zin_pos_ += used;
    got += wrote;
    consumed_.store(zin_pos_, std::memory_order_relaxed);
    if (rc == Z_STREAM_END) {
      zlast_ = 0;
      if (zin_pos_ < zin_.size()) {  // another member
        inflateReset(gz_);
        zlast_ = 1;
      }
      continue;
    }
    zlast_ = 1;
    if ((rc != Z_OK && rc != Z_BUF_ERROR) || (used == 0 && wrote == 0)) {  // corrupt, or truncated
      failed_ = true;
      break;
    }
  }
  return got;
}

// Whether a decoder whose window is full has no byte left to give: its input ends with the
// end of a frame or member. One byte of room tells (the end may not have been seen yet).
bool ReadAhead::at_end() {
  uint8_t probe;
  return fill(&probe, 1) == 0 && !failed_ && zin_pos_ == zin_.size() && zlast_ == 0;
}

std::optional<uint64_t> ReadAhead::finish() {
  {
    std::lock_guard lock(m_);
    released_ = size_t(size_);  // every chunk may move: the decoder runs to the end
  }
  cv_.notify_all();
  std::unique_lock lock(m_);
  cv_.wait(lock, [&] { return done_; });
  if (failed_) return std::nullopt;
  return ready_.load(std::memory_order_acquire);
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
