// The whole input as one contiguous span: a memory-mapped file, stdin, or decompressed data.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "memsnap/util/progress.hpp"

namespace memsnap::io {

enum class Compression { None, Gzip, Zstd };
enum class Encoding { Pickle, Json };

const char* to_string(Compression c);
const char* to_string(Encoding e);

struct ReadOptions {
  /// Upper bound on decompressed (or stdin) bytes held in memory; protects
  /// against decompression bombs. Mapped files are not limited.
  uint64_t max_buffer_bytes = uint64_t{16} << 30;
  /// Called every few MiB while decompressing (compressed bytes consumed, compressed size).
  ProgressFn progress;
};

/// Owns the bytes of one input. Compression and encoding are detected from the
/// content (magic numbers), never from the file name.
class ByteSource {
 public:
  /// Opens `path` ("-" reads stdin). Throws InputError on I/O or decompression failure.
  static ByteSource open(const std::string& path, const ReadOptions& options = {});
  /// Wraps bytes already in memory (tests, fuzzing); decompresses if they are compressed.
  static ByteSource from_bytes(std::vector<uint8_t> bytes, const ReadOptions& options = {});

  ByteSource(ByteSource&&) noexcept;
  ByteSource& operator=(ByteSource&&) noexcept;
  ~ByteSource();

  /// The decoded bytes (after decompression).
  std::span<const uint8_t> data() const { return data_; }
  /// Size of the input as stored (compressed size for compressed inputs).
  uint64_t stored_bytes() const { return stored_bytes_; }
  Compression compression() const { return compression_; }
  /// Pickle unless the first non-blank byte is '{' or '['.
  Encoding encoding() const;

 private:
  ByteSource() = default;
  void release();

  std::span<const uint8_t> data_;
  std::vector<uint8_t> buffer_;  // owns data_ unless mapped
  void* map_ = nullptr;
  size_t map_len_ = 0;
  uint64_t stored_bytes_ = 0;
  Compression compression_ = Compression::None;
};

/// Detects compression from the leading magic bytes.
Compression detect_compression(std::span<const uint8_t> bytes);

}  // namespace memsnap::io
