// The whole input as one contiguous span: a memory-mapped file, stdin, or decompressed data.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "memsnap/util/memory_budget.hpp"
#include "memsnap/util/pod_buffer.hpp"
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
  /// The run's memory bound: buffers are counted as util::Account::Input and
  /// stop growing at what it leaves (nullptr: max_buffer_bytes alone).
  util::MemoryBudget* budget = nullptr;
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
  /// Pickle unless the first non-blank byte (after a UTF-8 byte order mark) is '{' or '['.
  Encoding encoding() const;
  /// Throws InputError when the input is UTF-16 or UTF-32 text (JSON saved by an editor
  /// or PowerShell), naming the encoding instead of calling its first byte an opcode.
  void check_text_encoding() const;
  /// Throws InputError("offset N", ...) when the mapped file shrank while it was read
  /// (torch rewrites a snapshot in place): the missing pages read as zeros instead of
  /// killing the process with SIGBUS, and this says so. Call after decoding, also when
  /// decoding failed (the zeros are then the likely cause).
  void check_intact() const;

 private:
  ByteSource() = default;
  void release();

  std::span<const uint8_t> data_;
  util::PodBuffer<uint8_t> buffer_;  // owns data_ unless mapped
  void* map_ = nullptr;
  size_t map_len_ = 0;
  int guard_ = -1;  // slot in the SIGBUS guard while mapped
  uint64_t stored_bytes_ = 0;
  Compression compression_ = Compression::None;
};

/// Bytes of a UTF-8 byte order mark at the start of `bytes` (0 or 3).
size_t utf8_bom(std::span<const uint8_t> bytes);

/// Detects compression from the leading magic bytes.
Compression detect_compression(std::span<const uint8_t> bytes);

}  // namespace memsnap::io
