// Output that is never lost silently: checked writes, and files replaced atomically.
//
// The rules every command that writes follows (issue 11 "lost writes", issue 13 "output files"):
// - every write and the final flush are checked; a failure is an OutputError naming the
//   destination and errno's reason ("<stdout>: write failed: No space left on device");
// - `-o FILE` is written to a temporary file beside FILE (same directory, so the same file
//   system) and renamed over it only once complete, flushed and synced: a failed or
//   interrupted run leaves FILE as it was (SIGINT, SIGTERM and SIGHUP remove the temporary
//   file before the process dies); devices and FIFOs (/dev/null, a pipe) are written directly;
// - a destination that is one of the command's inputs (same device and inode, so through
//   links and other spellings too; "-" stands for whatever file standard input is) is refused
//   before anything is written, and so is standard output redirected onto an input
//   (`memsnap flame X >> X`: fstat of descriptor 1).
#pragma once

#include <memory>
#include <ostream>
#include <span>
#include <stdexcept>
#include <streambuf>
#include <string>
#include <utility>
#include <vector>

namespace memsnap::io {

/// A write, flush, sync or rename that failed, or a destination that is refused. One line.
class OutputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// The output bound was reached (OutputFile::set_limit): nothing more is written, the temporary
/// file is removed, the destination is untouched. One line.
class OutputLimitExceeded : public OutputError {
 public:
  using OutputError::OutputError;
};

/// Counts what passes through to `next` and throws OutputLimitExceeded(message) before the
/// byte past `limit` is written: a stream over it with exceptions(badbit) stops its writer there.
class LimitStreamBuf : public std::streambuf {
 public:
  LimitStreamBuf(std::streambuf* next, uint64_t limit, std::string message);
  uint64_t passed() const { return passed_; }

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  std::streambuf* next_;
  uint64_t limit_;
  uint64_t passed_ = 0;
  std::string message_;
};

/// A buffered streambuf over a file descriptor that remembers the first failed write
/// (its errno); after a failure every later write fails at once, so the stream goes bad.
class FdStreamBuf : public std::streambuf {
 public:
  explicit FdStreamBuf(int fd, size_t buffer_bytes = size_t{1} << 16);
  FdStreamBuf(const FdStreamBuf&) = delete;
  FdStreamBuf& operator=(const FdStreamBuf&) = delete;

  /// Writes what is buffered; false (and error() set) when a write failed now or before.
  bool flush_buffer();
  /// errno of the first failed write, 0 while everything was written.
  int error() const { return error_; }
  uint64_t bytes_written() const { return written_; }

 protected:
  int_type overflow(int_type c) override;
  std::streamsize xsputn(const char* s, std::streamsize n) override;
  int sync() override;

 private:
  bool write_all(const char* p, size_t n);

  int fd_;
  int error_ = 0;
  uint64_t written_ = 0;
  std::vector<char> buffer_;
};

/// One destination of a command's output: standard output for "-", else a file
/// written atomically (see the rules above). Open it before the slow work, so a refused
/// or unwritable destination fails at once; write through stream(); then commit().
class OutputFile {
 public:
  /// Opens `path` ("-": standard output). Throws OutputError when `path` (or, for "-", the
  /// file standard output was redirected to) is one of `inputs`, is a directory, or no
  /// temporary file can be created beside it.
  explicit OutputFile(const std::string& path, std::span<const std::string> inputs = {});
  /// Writes into `stream`, which the caller owns (the MCP server keeps a command's results in
  /// memory); `name` is the destination as messages show it. commit() flushes it.
  OutputFile(std::ostream& stream, std::string name);
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  /// Without commit(): removes the temporary file; the destination is untouched.
  ~OutputFile();

  std::ostream& stream() { return *stream_; }
  /// Flushes, syncs, closes and renames into place. Throws OutputError naming the
  /// destination and the reason when anything was lost.
  void commit();

  bool is_stdout() const { return path_ == "-"; }
  /// As shown in messages: the path, or "<stdout>".
  std::string shown() const { return is_stdout() ? "<stdout>" : path_; }
  uint64_t bytes_written() const;
  /// The output bound (0: none, the default): write_output stops the writer with
  /// OutputLimitExceeded(`message`) before more than `bytes` are written.
  void set_limit(uint64_t bytes, std::string message) {
    limit_ = bytes;
    limit_message_ = std::move(message);
  }
  uint64_t limit() const { return limit_; }
  const std::string& limit_message() const { return limit_message_; }

 private:
  uint64_t limit_ = 0;
  std::string limit_message_;
  std::string path_;    // as given
  std::string target_;  // where the file ends up (symbolic links resolved)
  std::string temp_;    // the temporary file beside it; empty when writing directly
  int fd_ = -1;
  int slot_ = -1;  // cleanup slot for signal handlers
  bool committed_ = false;
  bool external_ = false;  // a caller's stream: no file, nothing to clean up
  std::unique_ptr<FdStreamBuf> buf_;
  std::unique_ptr<std::ostream> own_stream_;
  std::ostream* stream_ = nullptr;
};

/// std::cout through a checked FdStreamBuf on descriptor 1 for the lifetime of this object
/// (create it first thing in main). finish() is the final flush: it throws OutputError
/// ("<stdout>: write failed: REASON") when any byte written to std::cout was lost.
class CheckedStdout {
 public:
  CheckedStdout();
  CheckedStdout(const CheckedStdout&) = delete;
  CheckedStdout& operator=(const CheckedStdout&) = delete;
  ~CheckedStdout();
  void finish();
  /// The checked buffer std::cout writes to now, or nullptr when none is installed.
  static FdStreamBuf* current();

 private:
  FdStreamBuf buf_;
  std::streambuf* previous_ = nullptr;
};

/// Whether `a` and `b` name the same existing file (device and inode); false when either
/// does not exist or is "-".
bool same_file(const std::string& a, const std::string& b);

/// Throws OutputError when standard output is a regular file that is one of `inputs` (same
/// device and inode; "-" is standard input): `memsnap flame X >> X` would append to its own
/// input. OutputFile("-") checks this; a command that reads a file checks it too before reading.
void refuse_stdout_onto_inputs(std::span<const std::string> inputs);

}  // namespace memsnap::io
