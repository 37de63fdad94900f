// ByteSource: mmap for plain files, one growing buffer for stdin and decompressed data.
#include "memsnap/io/byte_source.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <cerrno>
#include <cstring>

#include "memsnap/util/error.hpp"
#include "memsnap/util/units.hpp"

namespace memsnap::io {

const char* to_string(Compression c) {
  switch (c) {
    case Compression::None: return "none";
    case Compression::Gzip: return "gzip";
    case Compression::Zstd: return "zstd";
  }
  return "?";
}

const char* to_string(Encoding e) { return e == Encoding::Json ? "json" : "pickle"; }

Compression detect_compression(std::span<const uint8_t> b) {
  if (b.size() >= 4 && b[0] == 0x28 && b[1] == 0xB5 && b[2] == 0x2F && b[3] == 0xFD) return Compression::Zstd;
  if (b.size() >= 2 && b[0] == 0x1F && b[1] == 0x8B) return Compression::Gzip;
  return Compression::None;
}

namespace {

[[noreturn]] void too_big(uint64_t limit, const char* what) {
  throw InputError("", std::string(what) + " exceeds the in-memory limit of " + human_bytes(limit) +
                           " (raise it with --max-memory)");
}

// Grows `out` geometrically up to `limit`; returns the new writable tail.
void grow(std::vector<uint8_t>& out, size_t used, uint64_t limit, const char* what) {
  if (used >= limit) too_big(limit, what);
  uint64_t want = std::max<uint64_t>(uint64_t{1} << 20, uint64_t(out.size()) * 2);
  if (want > limit) want = limit;
  out.resize(want);
}

// Input handed to the decompressor per call: small enough for a progress line to move.
constexpr size_t kInputChunk = size_t{4} << 20;

std::vector<uint8_t> inflate_gzip(std::span<const uint8_t> in, uint64_t limit, const ProgressFn& progress) {
  std::vector<uint8_t> out;
  ProgressTicker ticker(&progress, in.size());
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 32) != Z_OK) throw InputError("", "cannot initialise zlib");
  struct End {
    z_stream* z;
    ~End() { inflateEnd(z); }
  } end_on_exit{&zs};
  size_t used = 0;
  size_t consumed = 0;
  out.resize(std::min<uint64_t>(limit, std::max<size_t>(in.size() * 4, 1 << 16)));
  for (;;) {
    ticker.at(consumed);
    size_t chunk = std::min<size_t>(in.size() - consumed, kInputChunk);
    zs.next_in = const_cast<Bytef*>(in.data() + consumed);
    zs.avail_in = static_cast<uInt>(chunk);
    if (used == out.size()) grow(out, used, limit, "decompressed gzip data");
    size_t room = std::min<size_t>(out.size() - used, 1u << 30);
    zs.next_out = out.data() + used;
    zs.avail_out = static_cast<uInt>(room);
    int rc = inflate(&zs, Z_NO_FLUSH);
    consumed += chunk - zs.avail_in;
    used += room - zs.avail_out;
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
  out.resize(used);
  out.shrink_to_fit();
  return out;
}

std::vector<uint8_t> decompress_zstd(std::span<const uint8_t> in, uint64_t limit, const ProgressFn& progress) {
  std::vector<uint8_t> out;
  ProgressTicker ticker(&progress, in.size());
  unsigned long long hint = ZSTD_getFrameContentSize(in.data(), in.size());
  if (hint != ZSTD_CONTENTSIZE_UNKNOWN && hint != ZSTD_CONTENTSIZE_ERROR) {
    if (hint > limit) too_big(limit, "decompressed zstd data");
    out.resize(std::max<unsigned long long>(hint, 1));
  } else {
    out.resize(std::min<uint64_t>(limit, std::max<size_t>(in.size() * 4, 1 << 16)));
  }
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> ctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  ZSTD_inBuffer src{in.data(), in.size(), 0};
  size_t used = 0;
  size_t last = 1;
  while (src.pos < in.size() || last != 0) {
    ticker.at(src.pos);
    src.size = std::min(in.size(), src.pos + kInputChunk);
    if (used == out.size()) grow(out, used, limit, "decompressed zstd data");
    ZSTD_outBuffer dst{out.data() + used, out.size() - used, 0};
    size_t before = src.pos;
    last = ZSTD_decompressStream(ctx.get(), &dst, &src);
    used += dst.pos;
    if (ZSTD_isError(last)) throw_at_offset(src.pos, std::string("corrupt zstd data: ") + ZSTD_getErrorName(last));
    if (src.pos == in.size() && last != 0 && dst.pos == 0 && src.pos == before)
      throw_at_offset(src.pos, "truncated zstd stream");
  }
  out.resize(used);
  out.shrink_to_fit();
  return out;
}

}  // namespace

ByteSource::ByteSource(ByteSource&& o) noexcept { *this = std::move(o); }

ByteSource& ByteSource::operator=(ByteSource&& o) noexcept {
  if (this != &o) {
    release();
    buffer_ = std::move(o.buffer_);
    data_ = o.data_;
    map_ = o.map_;
    map_len_ = o.map_len_;
    stored_bytes_ = o.stored_bytes_;
    compression_ = o.compression_;
    o.map_ = nullptr;
    o.map_len_ = 0;
    o.data_ = {};
  }
  return *this;
}

ByteSource::~ByteSource() { release(); }

void ByteSource::release() {
  if (map_ != nullptr) munmap(map_, map_len_);
  map_ = nullptr;
  map_len_ = 0;
  data_ = {};
  buffer_.clear();
}

Encoding ByteSource::encoding() const {
  for (uint8_t c : data_) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') continue;
    return (c == '{' || c == '[') ? Encoding::Json : Encoding::Pickle;
  }
  return Encoding::Pickle;
}

ByteSource ByteSource::from_bytes(std::vector<uint8_t> bytes, const ReadOptions& options) {
  ByteSource s;
  s.stored_bytes_ = bytes.size();
  s.compression_ = detect_compression(bytes);
  switch (s.compression_) {
    case Compression::Gzip: s.buffer_ = inflate_gzip(bytes, options.max_buffer_bytes, options.progress); break;
    case Compression::Zstd: s.buffer_ = decompress_zstd(bytes, options.max_buffer_bytes, options.progress); break;
    case Compression::None: s.buffer_ = std::move(bytes); break;
  }
  s.data_ = s.buffer_;
  return s;
}

ByteSource ByteSource::open(const std::string& path, const ReadOptions& options) {
  if (path == "-") {
    std::vector<uint8_t> buf;
    size_t used = 0;
    for (;;) {
      if (used == buf.size()) grow(buf, used, options.max_buffer_bytes, "standard input");
      ssize_t n = ::read(0, buf.data() + used, buf.size() - used);
      if (n < 0) {
        if (errno == EINTR) continue;
        throw InputError("", std::string("cannot read: ") + std::strerror(errno));
      }
      if (n == 0) break;
      used += static_cast<size_t>(n);
    }
    buf.resize(used);
    return from_bytes(std::move(buf), options);
  }
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw InputError("", std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw InputError("", std::string("cannot stat: ") + std::strerror(e));
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd);
    throw InputError("", "is a directory");
  }
  ByteSource s;
  if (S_ISREG(st.st_mode) && st.st_size > 0) {
    size_t len = static_cast<size_t>(st.st_size);
    void* m = mmap(nullptr, len, PROT_READ, MAP_PRIVATE, fd, 0);
    ::close(fd);
    if (m == MAP_FAILED) throw InputError("", std::string("cannot map: ") + std::strerror(errno));
    madvise(m, len, MADV_SEQUENTIAL);
    std::span<const uint8_t> bytes(static_cast<const uint8_t*>(m), len);
    s.stored_bytes_ = len;
    s.compression_ = detect_compression(bytes);
    if (s.compression_ == Compression::None) {
      s.map_ = m;
      s.map_len_ = len;
      s.data_ = bytes;
      return s;
    }
    try {
      s.buffer_ = s.compression_ == Compression::Gzip ? inflate_gzip(bytes, options.max_buffer_bytes, options.progress)
                                                      : decompress_zstd(bytes, options.max_buffer_bytes, options.progress);
    } catch (...) {
      munmap(m, len);
      throw;
    }
    munmap(m, len);
    s.data_ = s.buffer_;
    return s;
  }
  // Pipes, character devices and empty files: read through a buffer.
  std::vector<uint8_t> buf;
  size_t used = 0;
  for (;;) {
    if (used == buf.size()) grow(buf, used, options.max_buffer_bytes, "input");
    ssize_t n = ::read(fd, buf.data() + used, buf.size() - used);
    if (n < 0) {
      if (errno == EINTR) continue;
      int e = errno;
      ::close(fd);
      throw InputError("", std::string("cannot read: ") + std::strerror(e));
    }
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  ::close(fd);
  buf.resize(used);
  return from_bytes(std::move(buf), options);
}

}  // namespace memsnap::io
