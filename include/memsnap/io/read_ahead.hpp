// ReadAhead: a plain file read in order on the second core into a window of reused pages,
// for a parser that goes through it once from the front.
//
// Why: on the benchmark machine (a VM) going through a 1 GB file in the page cache by its
// mapping took 0.35 to 0.40 s, in 4 KiB pages, each faulted in and each a TLB miss; pread
// of the same file into 2 MiB pages that are used again took 0.15 s on one core (both with
// a read of every cache line). The window keeps the file's own offsets: byte i is at
// base() + i, like a mapping, so a parser sees one address range. Behind it, pages the
// parser has released are moved (mremap, no copy, no fault) to where the next chunk goes;
// the range they leave is unmapped. A parser that must read earlier bytes again (memo
// strings) reads them from the file's mapping instead.
//
// The same window serves a zstd or gzip input (start_decoding): the second core
// decompresses into it instead of reading. Decoding a 1 GB snapshot into one fresh buffer took 0.59 to 4.06 s on
// the benchmark VM, whose first touch of fresh memory is slow and varies by the minute;
// into a 4 MiB ring of reused pages it took 0.42 to 0.51 s. There is no mapping of the
// decoded bytes to read again: that parser keeps its own copy of what it must (see
// fast_build.cpp, its arena).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <thread>
#include <vector>

struct ZSTD_DCtx_s;
struct z_stream_s;

namespace memsnap::io {

class ReadAhead {
 public:
  /// Starts reading `size` bytes of `fd` from `offset`: the caller keeps `fd` open until
  /// this object is gone. nullptr when a reading thread or the window's address range cannot
  /// be had (the caller reads its mapping instead).
  /// `chunk`: what moves at a time, a multiple of the page size (tests make it small; the
  /// default is one huge page, which moves without touching 512 page table entries).
  static std::unique_ptr<ReadAhead> start(int fd, uint64_t offset, uint64_t size, size_t chunk = kChunk);
  enum class Codec { Zstd, Gzip };
  /// Starts decompressing `in` (zstd frames or gzip members one after another, kept alive by
  /// the caller until this object is gone) into the window, at most `limit` decoded bytes.
  /// size() is then `limit`: how many bytes there are is known once wait_for() returns
  /// short of it. nullptr as for start().
  static std::unique_ptr<ReadAhead> start_decoding(Codec codec, std::span<const uint8_t> in, uint64_t limit,
                                                   size_t chunk = kChunk);
  ~ReadAhead();
  ReadAhead(const ReadAhead&) = delete;
  ReadAhead& operator=(const ReadAhead&) = delete;

  /// Byte i of the file (from `offset`) is at base() + i once wait_for(i + 1) > i.
  const uint8_t* base() const { return base_; }
  uint64_t size() const { return size_; }
  /// Waits until `n` bytes have been read, the file ended or a read failed (a file that
  /// shrank: the mapping's SIGBUS guard tells the rest). Returns how many there are, at once
  /// and short of `n` when the window cannot hold `n` bytes past what is still in use: the
  /// caller then reads its mapping instead.
  size_t wait_for(size_t n);
  /// The caller reads no byte before `n` from the window again: pages wholly before it may
  /// be moved ahead. A caller that releases at least every chunk()/2 bytes never finds the
  /// window too small for what one opcode needs (unless that is about chunk()/2 itself).
  void release_before(size_t n);
  size_t chunk() const { return chunk_; }
  /// The anonymous memory the window holds at most.
  size_t window_bytes() const { return kChunks * chunk_; }

  /// Stops reading and gives the window's memory back: no byte of it may be read after.
  /// For a parser done with the input before it builds its result (the peak of memory).
  void close();
  /// A decoding window: lets the decoder go through the rest of the input (reusing the window,
  /// no byte of which may be read after) and returns the number of decoded bytes, or
  /// nullopt when the input is corrupt, truncated or decodes to more than the limit (its
  /// reader gives up and leaves the exact error to a decoder of the whole input).
  /// A file: returns the bytes read so far, and nullopt if a read failed.
  std::optional<uint64_t> finish();
  /// Stored bytes the decoder has consumed (its progress); for a file, the bytes read.
  uint64_t consumed() const { return consumed_.load(std::memory_order_relaxed); }
  /// The content size the first zstd frame declares, or the last gzip member's trailer
  /// (its size mod 4 GiB): not trusted, a hint for sizing; 0 when there is none. A file's
  /// size.
  uint64_t size_hint() const { return size_hint_; }

  static constexpr size_t kChunk = size_t{2} << 20;  // one huge page
  // The window: two chunks, 4 MiB of anonymous memory. On the 1 GB benchmark file 2, 3 and 8
  // chunks all took 0.98 to 1.02 s (10 alternating runs): the reader fills a chunk in a
  // tenth of the time the parser takes to go through it.
  static constexpr size_t kChunks = 2;

 private:
  ReadAhead() = default;
  bool launch();
  void run();
  size_t fill(uint8_t* dst, size_t want);  // the next `want` bytes, or fewer at the end
  size_t inflate_into(uint8_t* dst, size_t want);
  bool at_end();

  int fd_ = -1;
  uint64_t offset_ = 0;
  uint64_t size_ = 0;
  uint64_t size_hint_ = 0;
  size_t chunk_ = kChunk;
  // A decoding window: what it decodes, and how (neither zctx_ nor gz_: a file).
  std::span<const uint8_t> zin_;
  size_t zin_pos_ = 0;
  ZSTD_DCtx_s* zctx_ = nullptr;
  z_stream_s* gz_ = nullptr;
  size_t zlast_ = 1;     // ZSTD_decompressStream's last answer: 0 at the end of a frame (gzip: of a member)
  bool failed_ = false;  // under m_ once done_: a read or the decoding failed
  std::atomic<uint64_t> consumed_{0};
  uint8_t* base_ = nullptr;  // chunk-aligned, within the reservation
  void* map_ = nullptr;      // the reservation, size_ rounded up to chunks, plus one for alignment
  size_t map_len_ = 0;
  std::vector<uint8_t> moved_;  // by chunk: its pages moved ahead, its range no longer ours
  std::mutex m_;
  std::condition_variable cv_;
  std::atomic<size_t> ready_{0};  // bytes [0, ready_) are in the window
  size_t released_ = 0;           // under m_: whole chunks before it may move
  bool done_ = false;             // under m_: no more bytes will arrive
  bool cancel_ = false;           // under m_
  std::thread thread_;
};

}  // namespace memsnap::io
