// ByteSource: mmap for plain files (stdin too when it is one), one growing buffer for pipes and
// decompressed data, counted against the run's memory bound.
#include "memsnap/io/byte_source.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <exception>
#include <mutex>
#include <string_view>
#include <thread>
#include <utility>

#include "memsnap/util/error.hpp"
#include "memsnap/util/memory_mode.hpp"
#include "memsnap/util/prefault.hpp"
#include "memsnap/util/progress.hpp"
#include "memsnap/util/units.hpp"
#include "sigbus_guard.hpp"

namespace memsnap::io {

const char* to_string(Compression c) {
  switch (c) {
    case Compression::None: return "none";
    case Compression::Gzip: return "gzip";
    case Compression::Zstd: return "zstd";
  }
  return "?";
}

const char* to_string(Encoding e) {
  return e == Encoding::Json ? "json" : "pickle";
}

Compression detect_compression(std::span<const uint8_t> b) {
  if (b.size() >= 4 && b[0] == 0x28 && b[1] == 0xB5 && b[2] == 0x2F && b[3] == 0xFD) return Compression::Zstd;
  // A zstd skippable frame (magic 0x184D2A50..5F, little-endian) may come first: still zstd.
  if (b.size() >= 8 && (b[0] & 0xF0) == 0x50 && b[1] == 0x2A && b[2] == 0x4D && b[3] == 0x18) return Compression::Zstd;
  if (b.size() >= 2 && b[0] == 0x1F && b[1] == 0x8B) return Compression::Gzip;
  return Compression::None;
}

size_t utf8_bom(std::span<const uint8_t> b) {
  return b.size() >= 3 && b[0] == 0xEF && b[1] == 0xBB && b[2] == 0xBF ? 3 : 0;
}

namespace {

[[noreturn]] void shrank(uint64_t offset, size_t mapped) {
  throw_at_offset(offset, "the file shrank while it was being read (is it being rewritten?); " + with_commas(mapped) +
                              " bytes were there when it was opened");
}

// ---- buffers ----------------------------------------------------------------------------------

[[noreturn]] void too_big(uint64_t limit, const char* what) {
  throw InputError("", std::string(what) + " exceeds the in-memory limit of " + human_bytes(limit) +
                           " (raise it with --max-memory)");
}

// A buffer that grows geometrically (realloc, so no second copy and no zero fill),
// bounded by ReadOptions and counted as the run's Input. Never presized from a header.
// The first byte of what is read decides at once whether it can be a snapshot at all: a
// pickle's PROTO or a protocol 0/1 opcode, JSON (blanks, a byte-order mark, '{' or '['),
// or, for stored bytes, a gzip or zstd magic. /dev/zero and a bomb of zeros stop at byte 0.
bool plausible_start(std::span<const uint8_t> b, bool stored) {
  static constexpr std::string_view kPickle = "(]})NILFSVJKMTUXGBCcP";  // as pickle::unpickle() takes
  static constexpr std::string_view kJson = " \t\r\n{[";
  const uint8_t c = b[0];
  auto next = [&](size_t i, uint8_t v) { return b.size() <= i || b[i] == v; };  // unknown yet: plausible
  if (kPickle.find(char(c)) != std::string_view::npos || kJson.find(char(c)) != std::string_view::npos) return true;
  // PROTO, and the byte-order marks (named later), as pickle::unpickle() takes them.
  if (c == 0x80 || c == 0xEF || c == 0xFF || c == 0xFE) return true;
  if (!stored) return false;
  if (c == 0x1F) return next(1, 0x8B);                                           // gzip
  if (c == 0x28) return next(1, 0xB5) && next(2, 0x2F) && next(3, 0xFD);         // zstd
  return (c & 0xF0) == 0x50 && next(1, 0x2A) && next(2, 0x4D) && next(3, 0x18);  // zstd skippable
}

void sniff(std::span<const uint8_t> first, bool stored) {
  if (first.empty() || plausible_start(first, stored)) return;
  // UTF-16 or UTF-32 big-endian JSON starts with zeros: check_text_encoding() names it.
  for (size_t i = 1; i < first.size() && i < 4; ++i)
    if (first[i] == '{' || first[i] == '[') return;
  // Shown as pickle::unpickle() shows it: printable text quoted, else the first bytes in hex.
  std::string text, shown;
  bool printable = true;
  for (size_t i = 0; i < first.size() && i < 16; ++i) {
    uint8_t c = first[i];
    if (c == '\n' || c == '\r') break;
    if (c < 0x20 || c >= 0x7f) printable = false;
    text.push_back(char(c));
  }
  if (printable) {
    shown = "'" + text + "'";
  } else {
    char buf[8];
    shown = "bytes ";
    for (size_t i = 0; i < first.size() && i < 8; ++i) {
      std::snprintf(buf, sizeof buf, "%s%02x", i ? " " : "", first[i]);
      shown += buf;
    }
  }
  throw InputError(stored ? "offset 0" : "decoded offset 0",
                   "not a snapshot: the input is neither a pickle nor JSON (it starts with " + shown + ")");
}

class Sink {
 public:
  /// `sniff`: the first bytes written are checked as stored (stdin, a device) or decoded input.
  enum class Sniff { None, Stored, Decoded };
  Sink(const ReadOptions& o, const char* what, Sniff s = Sniff::None) : o_(o), what_(what), sniff_(s) {}
  // Room for at least one more byte; returns the writable tail.
  std::span<uint8_t> room() {
    if (used_ == buf_.capacity()) grow();
    return {buf_.data() + used_, buf_.capacity() - used_};
  }
  void wrote(size_t n) {
    if (used_ == 0 && n > 0 && sniff_ != Sniff::None && o_.sniff_snapshot)
      sniff({buf_.data(), std::min<size_t>(n, 16)}, sniff_ == Sniff::Stored);
    used_ += n;
    buf_.resize_uninitialized(used_);  // within capacity: growth keeps what was written
    if (o_.budget) o_.budget->set(util::Account::Input, used_);
  }
  size_t used() const { return used_; }
  void input_at(size_t) {}
  util::PodBuffer<uint8_t> take() {
    buf_.resize_uninitialized(used_);
    return std::move(buf_);
  }

 private:
  void grow() {
    uint64_t limit = o_.max_buffer_bytes;
    if (used_ >= limit) too_big(limit, what_);
    uint64_t want = std::max<uint64_t>(uint64_t{1} << 20, uint64_t(buf_.capacity()) * 2);
    want = std::min(want, limit);
    if (o_.budget) {
      uint64_t budget_left = o_.budget->left();  // counts used_ already
      if (budget_left == 0) o_.budget->check_more(util::Account::Input, 1);
      want = std::min<uint64_t>(want, used_ + budget_left);
    }
    buf_.reserve(size_t(want));
  }

  const ReadOptions& o_;
  const char* what_;
  Sniff sniff_;
  util::PodBuffer<uint8_t> buf_;
  size_t used_ = 0;
};

// Decoders write through a sink: Sink (one growing buffer) or StreamSink (the bytes a
// parser on another thread reads while they arrive).
template <class Out>
void inflate_gzip_into(std::span<const uint8_t> in, const ReadOptions& o, Out& out) {
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) throw InputError("", "cannot initialise zlib");
  struct End {
    z_stream* z;
    ~End() { inflateEnd(z); }
  } end_on_exit{&zs};
  ProgressTicker ticker(&o.progress, in.size());
  size_t consumed = 0;
  for (;;) {
    // Input per call is small enough for a progress line to move.
    size_t chunk = std::min<size_t>(in.size() - consumed, size_t{8} << 20);
    zs.next_in = const_cast<Bytef*>(in.data() + consumed);
    zs.avail_in = static_cast<uInt>(chunk);
    std::span<uint8_t> room = out.room();
    size_t n = std::min<size_t>(room.size(), 1u << 30);
    zs.next_out = room.data();
    zs.avail_out = static_cast<uInt>(n);
    int rc = inflate(&zs, Z_NO_FLUSH);
    consumed += chunk - zs.avail_in;
    out.wrote(n - zs.avail_out);
    ticker.at(consumed);
    out.input_at(consumed);
    if (rc == Z_STREAM_END) {
      if (consumed == in.size()) break;
      inflateReset(&zs);  // concatenated gzip members
      continue;
    }
    if (rc == Z_BUF_ERROR && consumed == in.size() && zs.avail_out != 0)
      throw_at_offset(consumed, "truncated gzip stream");
    if (rc != Z_OK && rc != Z_BUF_ERROR)
      throw_at_offset(consumed, "corrupt gzip data: " + std::string(zs.msg ? zs.msg : "error " + std::to_string(rc)));
  }
}

// The frame header's content size is not trusted for anything: a 21-byte frame can
// claim 15 GiB. The buffer grows with what is actually decompressed.
template <class Out>
void decompress_zstd_into(std::span<const uint8_t> in, const ReadOptions& o, Out& out) {
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  ZSTD_inBuffer src{in.data(), in.size(), 0};
  ProgressTicker ticker(&o.progress, in.size());
  size_t last = 1;
  while (src.pos < src.size || last != 0) {
    std::span<uint8_t> room = out.room();
    ZSTD_outBuffer dst{room.data(), room.size(), 0};
    size_t before = src.pos;
    last = ZSTD_decompressStream(ctx.get(), &dst, &src);
    out.wrote(dst.pos);
    ticker.at(src.pos);
    out.input_at(src.pos);
    if (ZSTD_isError(last)) throw_at_offset(src.pos, std::string("corrupt zstd data: ") + ZSTD_getErrorName(last));
    if (src.pos == src.size && last != 0 && dst.pos == 0 && src.pos == before)
      throw_at_offset(src.pos, "truncated zstd stream");
  }
}

util::PodBuffer<uint8_t> inflate_gzip(std::span<const uint8_t> in, const ReadOptions& o) {
  Sink out(o, "decompressed gzip data", Sink::Sniff::Decoded);
  inflate_gzip_into(in, o, out);
  return out.take();
}

util::PodBuffer<uint8_t> decompress_zstd(std::span<const uint8_t> in, const ReadOptions& o) {
  Sink out(o, "decompressed zstd data", Sink::Sniff::Decoded);
  decompress_zstd_into(in, o, out);
  return out.take();
}

util::PodBuffer<uint8_t> read_all(int fd, const ReadOptions& o, const char* what) {
  Sink out(o, what, Sink::Sniff::Stored);
  for (;;) {
    std::span<uint8_t> room = out.room();
    ssize_t n = ::read(fd, room.data(), std::min<size_t>(room.size(), size_t{1} << 30));
    if (n < 0) {
      if (errno == EINTR) continue;
      throw InputError("", std::string("cannot read: ") + std::strerror(errno));
    }
    if (n == 0) break;
    out.wrote(size_t(n));
  }
  return out.take();
}

// The sink of a decoder's first bytes: a vector of at most `cap`, then Full.
class HeadSink {
 public:
  struct Full {};
  HeadSink(std::vector<uint8_t>& out, size_t cap) : out_(out), cap_(cap) { out_.resize(cap); }
  ~HeadSink() { out_.resize(used_); }
  HeadSink(const HeadSink&) = delete;
  std::span<uint8_t> room() {
    if (used_ == cap_) throw Full{};
    return {out_.data() + used_, cap_ - used_};
  }
  void wrote(size_t n) { used_ += n; }
  void input_at(size_t) {}

 private:
  std::vector<uint8_t>& out_;
  size_t cap_;
  size_t used_ = 0;
};

}  // namespace

// ---- streaming: decoding on a second thread while the parser reads ----------------------------
//
// The decoded bytes go to one reservation of address space (MAP_NORESERVE: untouched pages
// cost nothing), so they never move and the reader can use [0, ready) while the thread
// writes past it. The reservation is the most the run may hold (--max-memory, the buffer
// limit), not what a header claims.
struct ByteSource::Decoder {
  std::mutex m;
  std::condition_variable cv;
  std::atomic<size_t> ready{0};       // decoded bytes [0, ready) are final
  std::atomic<uint64_t> consumed{0};  // stored bytes read to decode them
  std::atomic<bool> cancel{false};    // the reader is gone: stop early
  std::atomic<bool> finished{false};  // ended, its last progress call made: the reader's turn
  size_t wanted = 0;                  // under m: the most the reader waited for (lockstep)
  bool done = false;                  // under m; `error` is set before it
  std::exception_ptr error;
  uint8_t* base = nullptr;
  size_t reserved = 0;   // the most it may decode (the limits), within
  size_t map_bytes = 0;  // the mapping, in whole 2 MiB pages
  // What the thread reads, released when it ends.
  std::span<const uint8_t> in;
  void* in_map = nullptr;
  size_t in_map_len = 0;
  int in_guard = -1;
  util::PodBuffer<uint8_t> in_owned;
  std::vector<uint8_t> in_vector;
  Compression compression = Compression::None;
  ReadOptions options;
  std::thread thread;
  // A decoder that waits for its reader (ReadOptions::decode_window): started by the first
  // call that needs its buffer; until then, the input's first bytes are decoded apart.
  static constexpr size_t kHead = size_t{64} << 10;
  bool waits = false;
  std::atomic<bool> running{false};
  std::once_flag start_once, head_once;
  std::vector<uint8_t> head;

  void start() {
    std::call_once(start_once, [this] {
      thread = std::thread([this] { run(); });
      running.store(true, std::memory_order_release);
    });
  }
  std::span<const uint8_t> decode_head();

  ~Decoder() {
    {
      std::lock_guard lock(m);
      cancel.store(true);
    }
    cv.notify_all();  // a lockstep decoder may be waiting for the reader
    if (thread.joinable()) thread.join();
    release_input();
    if (base) util::unmap_huge(base, map_bytes);
  }
  void release_input() {
    unguard(in_guard);
    in_guard = -1;
    if (in_map) munmap(in_map, in_map_len);
    in_map = nullptr;
    in_owned = util::PodBuffer<uint8_t>();
    in_vector = std::vector<uint8_t>();
    in = {};
  }
  size_t wait_for(size_t n) {
    start();
    size_t r = ready.load(std::memory_order_acquire);
    if (r >= n) return r;
    std::unique_lock lock(m);
    if (n > wanted) {
      wanted = n;
      if (options.stream_lockstep) cv.notify_all();
    }
    cv.wait(lock, [&] { return done || ready.load(std::memory_order_acquire) >= n; });
    return ready.load(std::memory_order_acquire);
  }
  std::span<const uint8_t> finish() {
    start();
    size_t n = wait_for(SIZE_MAX);  // always takes the lock, so `error` is visible
    if (error) std::rethrow_exception(error);
    return {base, n};
  }
  bool reserve(const ReadOptions& o);
  void run();
};

namespace {

struct Cancelled {};

// The Sink of a streaming decoder: writes into the reservation and publishes every few MiB.
class StreamSink {
 public:
  StreamSink(ByteSource::Decoder& d, const char* what)
      : d_(d), what_(what), chunk_(std::max<size_t>(1, d.options.stream_chunk)) {}
  std::span<uint8_t> room() {
    if (d_.cancel.load(std::memory_order_relaxed)) throw Cancelled{};
    if (used_ == d_.reserved) full();
    return {d_.base + used_, std::min(chunk_, d_.reserved - used_)};
  }
  void wrote(size_t n) {
    if (used_ == 0 && n > 0 && d_.options.sniff_snapshot) sniff({d_.base, std::min<size_t>(n, 16)}, false);
    used_ += n;
    if (used_ - published_ >= chunk_) publish();
  }
  void input_at(size_t consumed) { consumed_ = consumed; }
  void publish() {
    if (d_.options.budget) d_.options.budget->set(util::Account::Input, used_);
    {
      std::unique_lock lock(d_.m);
      if (d_.options.stream_lockstep)  // the reader must be waiting past what it has
        d_.cv.wait(lock, [&] { return d_.wanted > published_ || d_.cancel.load(); });
      d_.consumed.store(consumed_, std::memory_order_relaxed);
      d_.ready.store(used_, std::memory_order_release);
    }
    d_.cv.notify_all();
    published_ = used_;
  }

 private:
  [[noreturn]] void full() {
    uint64_t limit = d_.options.max_buffer_bytes;
    if (used_ >= limit) too_big(limit, what_);
    if (d_.options.budget) {
      d_.options.budget->set(util::Account::Input, used_);
      d_.options.budget->check_more(util::Account::Input, 1);
    }
    too_big(d_.reserved, what_);
  }

  ByteSource::Decoder& d_;
  const char* what_;
  size_t chunk_;
  size_t used_ = 0;
  size_t published_ = 0;
  size_t consumed_ = 0;
};

}  // namespace

void ByteSource::Decoder::run() {
  try {
    bool gz = compression == Compression::Gzip;
    StreamSink out(*this, gz ? "decompressed gzip data" : "decompressed zstd data");
    if (gz)
      inflate_gzip_into(in, options, out);
    else
      decompress_zstd_into(in, options, out);
    out.input_at(in.size());
    out.publish();
    if (in_guard >= 0) {
      uint64_t f = guard_fault(in_guard);
      if (f != UINT64_MAX) shrank(f, in_map_len);
    }
  } catch (const Cancelled&) {
  } catch (...) {
    error = std::current_exception();
  }
  release_input();
  {
    std::lock_guard lock(m);
    done = true;
    finished.store(true, std::memory_order_release);
  }
  cv.notify_all();
}

// Reserves the address space for the decoded bytes; false when it cannot (the caller then
// decodes the usual way, before parsing).
bool ByteSource::Decoder::reserve(const ReadOptions& o) {
  if (!o.stream) return false;
  uint64_t want = o.max_buffer_bytes;
  if (o.budget) want = std::min(want, o.budget->cap() > o.budget->used() ? o.budget->cap() - o.budget->used() : 0);
  constexpr uint64_t kHuge = uint64_t{2} << 20;
  if (want == 0 || want > (uint64_t{1} << 46)) return false;
  uint64_t whole = (want + kHuge - 1) & ~(kHuge - 1);
  // Huge pages: first-touch faults of 4 KiB pages would cost as much as the decoding.
  base = static_cast<uint8_t*>(util::map_huge_aligned(size_t(whole), MAP_NORESERVE));
  if (base == nullptr) return false;
  map_bytes = size_t(whole);
  reserved = size_t(want);
  options = o;
  return true;
}

ByteSource ByteSource::stream(std::unique_ptr<Decoder> d, std::span<const uint8_t> in) {
  ByteSource s;
  s.stored_bytes_ = in.size();
  s.compression_ = detect_compression(in);
  d->in = in;
  d->compression = s.compression_;
  s.read_ahead_chunk_ = d->options.read_ahead_chunk;
  d->waits = d->options.decode_window && d->options.threads > 1;
  if (!d->waits) d->start();
  s.decoder_ = std::move(d);
  return s;
}

// The first bytes of a decoder that waits, decoded apart (encoding() looks at 64 KiB):
// as many as there are up to there, fewer at the end or at an error (which data() reports).
std::span<const uint8_t> ByteSource::Decoder::decode_head() {
  std::call_once(head_once, [this] {
    HeadSink out(head, kHead);
    try {
      if (compression == Compression::Gzip)
        inflate_gzip_into(in, ReadOptions{}, out);
      else
        decompress_zstd_into(in, ReadOptions{}, out);
    } catch (const HeadSink::Full&) {
    } catch (const InputError&) {
    }
  });
  return head;
}

std::span<const uint8_t> ByteSource::data() const {
  return decoder_ ? decoder_->finish() : data_;
}

const uint8_t* ByteSource::begin() const {
  return decoder_ ? decoder_->base : data_.data();
}

size_t ByteSource::wait_for(size_t n) const {
  return decoder_ ? decoder_->wait_for(n) : data_.size();
}

std::unique_ptr<ReadAhead> ByteSource::read_ahead() const {
  if (decoder_) {
    if (!decoder_->waits || decoder_->running.load(std::memory_order_acquire)) return nullptr;
    // The window holds 4 MiB, not the decoded bytes: their limit is the one against bombs,
    // not what --max-memory leaves for a whole buffer (the parse counts what it keeps).
    auto codec = compression_ == Compression::Gzip ? ReadAhead::Codec::Gzip : ReadAhead::Codec::Zstd;
    return ReadAhead::start_decoding(codec, decoder_->in, decoder_->options.max_buffer_bytes, read_ahead_chunk_);
  }
  if (file_ < 0) return nullptr;
  return ReadAhead::start(file_, file_offset_, data_.size(), read_ahead_chunk_);
}

std::optional<uint64_t> ByteSource::decoded_size() const {
  if (!decoder_) return data_.size();
  if (!decoder_->running.load(std::memory_order_acquire)) return std::nullopt;
  if (!decoder_->finished.load(std::memory_order_acquire)) return std::nullopt;
  return decoder_->ready.load(std::memory_order_acquire);
}

std::span<const uint8_t> ByteSource::head(size_t n) const {
  if (!decoder_) return data_.first(std::min(n, data_.size()));
  if (decoder_->waits && !decoder_->running.load(std::memory_order_acquire) && n <= Decoder::kHead) {
    std::span<const uint8_t> h = decoder_->decode_head();
    return h.first(std::min(n, h.size()));
  }
  return {decoder_->base, std::min(n, decoder_->wait_for(n))};
}

ByteSource::ByteSource(ByteSource&& o) noexcept {
  *this = std::move(o);
}

ByteSource& ByteSource::operator=(ByteSource&& o) noexcept {
  if (this != &o) {
    release();
    buffer_ = std::move(o.buffer_);
    data_ = o.data_;
    map_ = o.map_;
    map_len_ = o.map_len_;
    guard_ = o.guard_;
    file_ = std::exchange(o.file_, -1);
    file_offset_ = o.file_offset_;
    read_ahead_chunk_ = o.read_ahead_chunk_;
    stored_bytes_ = o.stored_bytes_;
    compression_ = o.compression_;
    decoder_ = std::move(o.decoder_);
    o.map_ = nullptr;
    o.map_len_ = 0;
    o.guard_ = -1;
    o.data_ = {};
  }
  return *this;
}

ByteSource::~ByteSource() {
  release();
}

void ByteSource::release() {
  unguard(guard_);
  guard_ = -1;
  if (file_ >= 0) ::close(file_);
  file_ = -1;
  if (map_ != nullptr) util::unmap_later(map_, map_len_);  // nothing reads it once released
  map_ = nullptr;
  map_len_ = 0;
  data_ = {};
  buffer_ = util::PodBuffer<uint8_t>();
  decoder_.reset();  // stops and joins a decoder still running
}

Encoding ByteSource::encoding() const {
  // The first 64 KiB decide unless they are all blank (then everything is read).
  std::span<const uint8_t> b = head(size_t{64} << 10);
  for (int pass = 0; pass < 2; ++pass, b = data()) {
    for (uint8_t c : b.subspan(utf8_bom(b))) {
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
      return (c == '{' || c == '[') ? Encoding::Json : Encoding::Pickle;
    }
  }
  return Encoding::Pickle;
}

void ByteSource::check_text_encoding() const {
  std::span<const uint8_t> b = head(4);
  const char* name = nullptr;
  if (b.size() >= 4 && b[0] == 0xFF && b[1] == 0xFE && b[2] == 0 && b[3] == 0)
    name = "UTF-32 (little-endian)";
  else if (b.size() >= 4 && b[0] == 0 && b[1] == 0 && b[2] == 0xFE && b[3] == 0xFF)
    name = "UTF-32 (big-endian)";
  else if (b.size() >= 2 && b[0] == 0xFF && b[1] == 0xFE)
    name = "UTF-16 (little-endian)";
  else if (b.size() >= 2 && b[0] == 0xFE && b[1] == 0xFF)
    name = "UTF-16 (big-endian)";
  else if (b.size() >= 4 && (b[0] == '{' || b[0] == '[') && b[1] == 0 && b[2] == 0 && b[3] == 0)
    name = "UTF-32 (little-endian)";
  else if (b.size() >= 4 && b[0] == 0 && b[1] == 0 && b[2] == 0 && (b[3] == '{' || b[3] == '['))
    name = "UTF-32 (big-endian)";
  else if (b.size() >= 2 && (b[0] == '{' || b[0] == '[') && b[1] == 0)
    name = "UTF-16 (little-endian)";
  else if (b.size() >= 2 && b[0] == 0 && (b[1] == '{' || b[1] == '['))
    name = "UTF-16 (big-endian)";
  if (name)
    throw_at_offset(0,
                    std::string("the input is ") + name +
                        " text; memsnap reads JSON as UTF-8 (convert it, e.g. iconv -f UTF-16 -t UTF-8) or a pickle");
}

void ByteSource::check_intact() const {
  // A decoder that never started still holds the stored file's mapping (read through a
  // window, perhaps); one that ran has checked it itself.
  if (decoder_ && decoder_->in_guard >= 0 && !decoder_->running.load(std::memory_order_acquire)) {
    uint64_t f = guard_fault(decoder_->in_guard);
    if (f != UINT64_MAX) shrank(f, decoder_->in_map_len);
  }
  if (guard_ < 0) return;
  uint64_t f = guard_fault(guard_);
  if (f == UINT64_MAX) return;
  shrank(f, map_len_);
}

ByteSource ByteSource::from_bytes(std::vector<uint8_t> bytes, const ReadOptions& options) {
  ByteSource s;
  s.stored_bytes_ = bytes.size();
  s.compression_ = detect_compression(bytes);
  if (s.compression_ != Compression::None) {
    auto d = std::make_unique<Decoder>();
    if (d->reserve(options)) {
      d->in_vector = std::move(bytes);
      std::span<const uint8_t> in(d->in_vector);
      return stream(std::move(d), in);
    }
  }
  switch (s.compression_) {
    case Compression::Gzip: s.buffer_ = inflate_gzip(bytes, options); break;
    case Compression::Zstd: s.buffer_ = decompress_zstd(bytes, options); break;
    case Compression::None:
      s.buffer_.resize_uninitialized(bytes.size());
      if (!bytes.empty()) std::memcpy(s.buffer_.data(), bytes.data(), bytes.size());
      break;
  }
  s.data_ = std::span<const uint8_t>(s.buffer_.data(), s.buffer_.size());
  return s;
}

namespace {

// Maps [offset, offset + len) of a regular file read-only.
const uint8_t* map_file(int fd, uint64_t offset, size_t len, void*& map, size_t& map_len) {
  uint64_t aligned = offset & ~uint64_t(sysconf(_SC_PAGESIZE) - 1);
  map_len = size_t(len + (offset - aligned));
  map = mmap(nullptr, map_len, PROT_READ, MAP_PRIVATE, fd, off_t(aligned));
  if (map == MAP_FAILED) {
    map = nullptr;
    throw InputError("", std::string("cannot map: ") + std::strerror(errno));
  }
  madvise(map, map_len, MADV_SEQUENTIAL);
  return static_cast<const uint8_t*>(map) + (offset - aligned);
}

}  // namespace

ByteSource ByteSource::open(const std::string& path, const ReadOptions& options) {
  bool is_stdin = path == "-";
  int fd = is_stdin ? 0 : ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError("", std::string("cannot open: ") + std::strerror(errno));
  struct Closer {
    int fd;
    bool own;
    ~Closer() {
      if (own) ::close(fd);
    }
  } closer{fd, !is_stdin};
  struct stat st {};
  if (fstat(fd, &st) != 0) throw InputError("", std::string("cannot stat: ") + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw InputError("", "is a directory");
  uint64_t offset = 0;
  if (is_stdin && S_ISREG(st.st_mode)) {  // `memsnap analyze - < file`: map it too
    off_t pos = lseek(fd, 0, SEEK_CUR);
    offset = pos > 0 ? uint64_t(pos) : 0;
  }
  ByteSource s;
  if (S_ISREG(st.st_mode) && uint64_t(st.st_size) > offset) {
    size_t len = static_cast<size_t>(uint64_t(st.st_size) - offset);
    const uint8_t* p = map_file(fd, offset, len, s.map_, s.map_len_);
    s.guard_ = guard_mapping(s.map_, s.map_len_);
    std::span<const uint8_t> bytes(p, len);
    s.stored_bytes_ = len;
    s.compression_ = detect_compression(bytes);
    if (s.compression_ == Compression::None) {
      s.data_ = bytes;
      if (len >= options.read_ahead_from && options.threads > 1) {
        s.file_ = fcntl(fd, F_DUPFD_CLOEXEC, 0);  // -1: no read-ahead, the mapping serves
        s.file_offset_ = offset;
        s.read_ahead_chunk_ = options.read_ahead_chunk;
      }
      return s;
    }
    if (auto d = std::make_unique<Decoder>(); d->reserve(options)) {  // the mapping goes with the decoder
      d->in_map = std::exchange(s.map_, nullptr);
      d->in_map_len = std::exchange(s.map_len_, 0);
      d->in_guard = std::exchange(s.guard_, -1);
      return stream(std::move(d), bytes);
    }
    // Decompress, then let the mapping go (the destructor of a moved-from source would too).
    util::PodBuffer<uint8_t> out =
        s.compression_ == Compression::Gzip ? inflate_gzip(bytes, options) : decompress_zstd(bytes, options);
    s.check_intact();
    ByteSource d;
    d.stored_bytes_ = s.stored_bytes_;
    d.compression_ = s.compression_;
    d.buffer_ = std::move(out);
    d.data_ = std::span<const uint8_t>(d.buffer_.data(), d.buffer_.size());
    return d;
  }
  // Pipes, character devices and empty files: read through a growing buffer.
  util::PodBuffer<uint8_t> raw = read_all(fd, options, is_stdin ? "standard input" : "input");
  s.stored_bytes_ = raw.size();
  std::span<const uint8_t> bytes(raw.data(), raw.size());
  s.compression_ = detect_compression(bytes);
  if (s.compression_ != Compression::None) {
    if (auto d = std::make_unique<Decoder>(); d->reserve(options)) {
      d->in_owned = std::move(raw);
      std::span<const uint8_t> in(d->in_owned.data(), d->in_owned.size());
      return stream(std::move(d), in);
    }
  }
  if (s.compression_ == Compression::None) {
    s.buffer_ = std::move(raw);
    s.data_ = std::span<const uint8_t>(s.buffer_.data(), s.buffer_.size());
    return s;
  }
  util::PodBuffer<uint8_t> out =
      s.compression_ == Compression::Gzip ? inflate_gzip(bytes, options) : decompress_zstd(bytes, options);
  raw = util::PodBuffer<uint8_t>();
  if (options.budget) options.budget->set(util::Account::Input, out.size());
  s.buffer_ = std::move(out);
  s.data_ = std::span<const uint8_t>(s.buffer_.data(), s.buffer_.size());
  return s;
}

}  // namespace memsnap::io
