// The whole input as one contiguous span: a memory-mapped file, stdin, or decompressed data.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "memsnap/io/read_ahead.hpp"
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
  /// against decompression bombs. Mapped files are not limited. A decoding window
  /// (decode_window) holds 4 MiB of them at a time and stops at this many too; the run's
  /// memory bound (`budget`) limits only what is held.
  uint64_t max_buffer_bytes = uint64_t{16} << 30;
  /// Called every few MiB while decompressing (compressed bytes consumed, compressed size).
  ProgressFn progress;
  /// The run's memory bound: buffers are counted as util::Account::Input and
  /// stop growing at what it leaves (nullptr: max_buffer_bytes alone).
  util::MemoryBudget* budget = nullptr;
  /// Decode compressed input on a second thread while the caller parses what has
  /// arrived (ByteSource::wait_for), instead of decoding it all first. A decoding error
  /// then surfaces from data() rather than from open(). `progress` is called from that
  /// thread until decoded_size() is known, never at the same time as by the reader.
  bool stream = false;
  /// The input must be a snapshot: its first stored bytes (standard input, a device) and its
  /// first decoded bytes are checked as they arrive, and bytes no pickle, JSON, gzip or zstd
  /// starts with stop the read there (/dev/zero, a bomb of zeros) rather than after gigabytes.
  bool sniff_snapshot = false;
  /// While streaming, the decoder publishes this many bytes at a time (tests make it small,
  /// so that the reader catches up with the decoder and waits).
  size_t stream_chunk = size_t{4} << 20;
  /// Tests: the decoder publishes its next chunk only once the reader waits for it, so
  /// that the reader meets every chunk boundary.
  bool stream_lockstep = false;
  /// A plain file at least this long is read ahead on the second core (ByteSource::
  /// read_ahead). Its 4 MiB window is then at most 1/16 of the file, and it is gone before
  /// the analyses, whose memory makes the peak of a file near half its size (a trace
  /// without frames: 0.485x with or without the window).
  uint64_t read_ahead_from = uint64_t{64} << 20;
  /// Tests: the read-ahead window's chunk (see ReadAhead::start).
  size_t read_ahead_chunk = ReadAhead::kChunk;
  /// A streamed compressed input, on a machine with a second core, waits for its reader: a
  /// parser that goes through it once takes it through a window (read_ahead(), then
  /// ReadAhead::start_decoding), any other reader starts the decoder into one buffer. Tests
  /// turn this off to test that decoder.
  bool decode_window = true;
  /// Cores the reader may use: from 2, a second thread decodes compressed input or reads a
  /// large file ahead. The library never asks the machine: the CLI passes its core count.
  unsigned threads = 2;
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

  /// The decoded bytes (after decompression). While a compressed input is still being
  /// decoded (ReadOptions::stream), waits for the end and throws the decoder's InputError
  /// if it failed.
  std::span<const uint8_t> data() const;
  /// True when the decoded bytes arrive while they are read: begin() and wait_for().
  bool streaming() const { return decoder_ != nullptr; }
  /// The first decoded byte: [begin(), begin() + wait_for(n)) may be read at once.
  const uint8_t* begin() const;
  /// Waits until `n` decoded bytes are there or decoding stopped (at the end, or on an
  /// error that data() reports); returns how many there are. Never throws.
  size_t wait_for(size_t n) const;
  /// The number of decoded bytes once decoding has ended; nullopt while a streaming
  /// decoder still runs (it reports its own progress, in stored bytes, until then).
  std::optional<uint64_t> decoded_size() const;

  struct Decoder;  // byte_source.cpp: the decoding thread and what it shares with the reader
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
  /// For a plain file of at least ReadOptions::read_ahead_from bytes read by its mapping,
  /// on a machine with a second core: the same bytes read on that core into a window (see
  /// read_ahead.hpp), for a parser going through them in order. For a compressed input
  /// whose decoder waits (ReadOptions::decode_window) and has not started: the bytes decoded on that
  /// core into a window; they are not kept, and data(), begin() or wait_for() decode them
  /// again. nullptr otherwise.
  std::unique_ptr<ReadAhead> read_ahead() const;

 private:
  ByteSource() = default;
  void release();
  static ByteSource stream(std::unique_ptr<Decoder> d, std::span<const uint8_t> in);
  std::span<const uint8_t> head(size_t n) const;

  std::span<const uint8_t> data_;
  util::PodBuffer<uint8_t> buffer_;  // owns data_ unless mapped
  void* map_ = nullptr;
  size_t map_len_ = 0;
  int guard_ = -1;            // slot in the SIGBUS guard while mapped
  int file_ = -1;             // a plain file's descriptor while mapped, for read_ahead()
  uint64_t file_offset_ = 0;  // where the mapping starts in it (stdin already read from)
  size_t read_ahead_chunk_ = ReadAhead::kChunk;
  uint64_t stored_bytes_ = 0;
  Compression compression_ = Compression::None;
  std::unique_ptr<Decoder> decoder_;
};

/// Bytes of a UTF-8 byte order mark at the start of `bytes` (0 or 3).
size_t utf8_bom(std::span<const uint8_t> bytes);

/// Detects compression from the leading magic bytes.
Compression detect_compression(std::span<const uint8_t> bytes);

}  // namespace memsnap::io
