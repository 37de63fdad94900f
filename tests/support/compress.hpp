// gzip and zstd of bytes in memory, for the tests of compressed input: the unit tests and
// the fuzz target (which cannot link doctest, so a failure throws rather than REQUIREs;
// doctest reports the exception as the test's failure).
#pragma once

#include <zlib.h>
#include <zstd.h>

#include <cstdint>
#include <span>
#include <stdexcept>
#include <vector>

namespace memsnap::test {

/// One gzip member.
inline std::vector<uint8_t> gzip_of(std::span<const uint8_t> in, int level = Z_BEST_COMPRESSION) {
  z_stream zs{};
  if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)  // 16: gzip
    throw std::runtime_error("gzip_of: deflateInit2 failed");
  std::vector<uint8_t> out(deflateBound(&zs, uLong(in.size())) + 64);
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = uInt(in.size());
  zs.next_out = out.data();
  zs.avail_out = uInt(out.size());
  int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("gzip_of: deflate did not finish");
  return out;
}

/// One zstd frame; `with_content_size` false writes it as a stream does, without its size.
inline std::vector<uint8_t> zstd_of(std::span<const uint8_t> in, bool with_content_size = true,
                                    int level = ZSTD_CLEVEL_DEFAULT) {
  ZSTD_CCtx* ctx = ZSTD_createCCtx();
  if (ctx == nullptr) throw std::runtime_error("zstd_of: no context");
  ZSTD_CCtx_setParameter(ctx, ZSTD_c_contentSizeFlag, with_content_size ? 1 : 0);
  ZSTD_CCtx_setParameter(ctx, ZSTD_c_compressionLevel, level);
  std::vector<uint8_t> out(ZSTD_compressBound(in.size()));
  size_t n = with_content_size ? ZSTD_compress2(ctx, out.data(), out.size(), in.data(), in.size()) : 0;
  if (!with_content_size) {  // streaming: the frame does not record its size
    ZSTD_inBuffer src{in.data(), in.size(), 0};
    ZSTD_outBuffer dst{out.data(), out.size(), 0};
    size_t left;
    while ((left = ZSTD_compressStream2(ctx, &dst, &src, ZSTD_e_end)) != 0 && !ZSTD_isError(left)) {
    }
    n = ZSTD_isError(left) ? left : dst.pos;
  }
  ZSTD_freeCCtx(ctx);
  if (ZSTD_isError(n)) throw std::runtime_error("zstd_of: compression failed");
  out.resize(n);
  return out;
}

}  // namespace memsnap::test
