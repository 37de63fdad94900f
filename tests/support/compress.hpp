// gzip and zstd of bytes in memory, for the tests of compressed input.
#pragma once

#include <doctest/doctest.h>
#include <zlib.h>
#include <zstd.h>

#include <cstdint>
#include <vector>

namespace memsnap::test {

/// One gzip member (best compression).
inline std::vector<uint8_t> gzip_of(const std::vector<uint8_t>& in) {
  z_stream zs{};
  REQUIRE(deflateInit2(&zs, Z_BEST_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) == Z_OK);  // 16: gzip
  std::vector<uint8_t> out(deflateBound(&zs, uLong(in.size())) + 64);
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = uInt(in.size());
  zs.next_out = out.data();
  zs.avail_out = uInt(out.size());
  int rc = deflate(&zs, Z_FINISH);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  REQUIRE(rc == Z_STREAM_END);
  return out;
}

/// One zstd frame; `with_content_size` false writes it as a stream does, without its size.
inline std::vector<uint8_t> zstd_of(const std::vector<uint8_t>& in, bool with_content_size = true) {
  ZSTD_CCtx* ctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(ctx, ZSTD_c_contentSizeFlag, with_content_size ? 1 : 0);
  std::vector<uint8_t> out(ZSTD_compressBound(in.size()));
  size_t n = with_content_size ? ZSTD_compress2(ctx, out.data(), out.size(), in.data(), in.size()) : 0;
  if (!with_content_size) {  // streaming: the frame does not record its size
    ZSTD_inBuffer src{in.data(), in.size(), 0};
    ZSTD_outBuffer dst{out.data(), out.size(), 0};
    while (ZSTD_compressStream2(ctx, &dst, &src, ZSTD_e_end) != 0) {
    }
    n = dst.pos;
  }
  ZSTD_freeCCtx(ctx);
  REQUIRE_FALSE(ZSTD_isError(n));
  out.resize(n);
  return out;
}

}  // namespace memsnap::test
