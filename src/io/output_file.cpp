// Checked output: a streambuf that remembers errno, files replaced by rename, a checked stdout.
#include "memsnap/io/output_file.hpp"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <mutex>

namespace memsnap::io {

// ---- FdStreamBuf -------------------------------------------------------------------------

FdStreamBuf::FdStreamBuf(int fd, size_t buffer_bytes) : fd_(fd), buffer_(std::max<size_t>(buffer_bytes, 64)) {
  setp(buffer_.data(), buffer_.data() + buffer_.size());
}

bool FdStreamBuf::write_all(const char* p, size_t n) {
  if (error_ != 0) return false;
  while (n > 0) {
    ssize_t w = ::write(fd_, p, std::min<size_t>(n, size_t{1} << 30));
    if (w < 0) {
      if (errno == EINTR) continue;
      error_ = errno;
      return false;
    }
    if (w == 0) {
      error_ = EIO;
      return false;
    }
    p += w;
    n -= static_cast<size_t>(w);
    written_ += static_cast<uint64_t>(w);
  }
  return true;
}

bool FdStreamBuf::flush_buffer() {
  size_t n = static_cast<size_t>(pptr() - pbase());
  bool ok = n == 0 ? error_ == 0 : write_all(pbase(), n);
  setp(buffer_.data(), buffer_.data() + buffer_.size());  // after a failure the bytes are dropped
  return ok;
}

FdStreamBuf::int_type FdStreamBuf::overflow(int_type c) {
  if (!flush_buffer()) return traits_type::eof();
  if (!traits_type::eq_int_type(c, traits_type::eof())) {
    *pptr() = traits_type::to_char_type(c);
    pbump(1);
  }
  return traits_type::not_eof(c);
}

std::streamsize FdStreamBuf::xsputn(const char* s, std::streamsize n) {
  if (n <= 0) return 0;
  size_t len = static_cast<size_t>(n);
  if (len <= static_cast<size_t>(epptr() - pptr())) {
    std::memcpy(pptr(), s, len);
    pbump(static_cast<int>(len));
    return n;
  }
  if (!flush_buffer()) return 0;
  if (len >= buffer_.size()) return write_all(s, len) ? n : 0;
  std::memcpy(pptr(), s, len);
  pbump(static_cast<int>(len));
  return n;
}

int FdStreamBuf::sync() {
  return flush_buffer() ? 0 : -1;
}

// ---- temporary files removed on SIGINT, SIGTERM, SIGHUP ----------------------------------

namespace {

// A fixed table the signal handler can read without allocating or locking.
constexpr int kSlots = 8;
char g_temp_path[kSlots][PATH_MAX];
volatile std::sig_atomic_t g_temp_used[kSlots];
std::mutex g_slots_mutex;

extern "C" void remove_temps_and_die(int sig) {
  for (int i = 0; i < kSlots; ++i)
    if (g_temp_used[i]) ::unlink(g_temp_path[i]);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

void install_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      if (sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;  // keep an ignored signal ignored
      struct sigaction sa {};
      sa.sa_handler = remove_temps_and_die;
      sigemptyset(&sa.sa_mask);
      sigaction(sig, &sa, nullptr);
    }
  });
}

int claim_slot(const std::string& path) {
  if (path.size() >= PATH_MAX) return -1;
  std::lock_guard<std::mutex> lock(g_slots_mutex);
  for (int i = 0; i < kSlots; ++i) {
    if (g_temp_used[i]) continue;
    std::memcpy(g_temp_path[i], path.c_str(), path.size() + 1);
    std::atomic_signal_fence(std::memory_order_seq_cst);  // the handler never sees half a path
    g_temp_used[i] = 1;
    return i;
  }
  return -1;  // more than kSlots outputs at once: still removed on every normal path
}

void release_slot(int slot) {
  if (slot < 0) return;
  std::lock_guard<std::mutex> lock(g_slots_mutex);
  g_temp_used[slot] = 0;
}

std::string reason(int err) {
  return std::strerror(err ? err : EIO);
}

bool same_inode(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

mode_t default_mode() {
  mode_t mask = ::umask(022);
  ::umask(mask);
  return 0666 & ~mask;
}

}  // namespace

bool same_file(const std::string& a, const std::string& b) {
  if (a == "-" || b == "-") return false;
  struct stat sa {
  }, sb{};
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 && same_inode(sa, sb);
}

namespace {

// The input among `inputs` that is the file `out` (same device and inode: through symbolic and
// hard links and any other spelling; "-" is standard input, whatever file that is), or nullptr.
const std::string* input_that_is(const struct stat& out, std::span<const std::string> inputs) {
  for (const auto& in : inputs) {
    struct stat st {};
    bool found = in == "-" ? ::fstat(STDIN_FILENO, &st) == 0 : ::stat(in.c_str(), &st) == 0;
    // Only a regular file can be lost: /dev/null or one pipe on both ends is harmless.
    if (found && S_ISREG(st.st_mode) && same_inode(st, out)) return &in;
  }
  return nullptr;
}

std::string shown_input(const std::string& in) {
  return in == "-" ? "<stdin>" : in;
}

}  // namespace

void refuse_stdout_onto_inputs(std::span<const std::string> inputs) {
  struct stat out {};
  if (::fstat(STDOUT_FILENO, &out) != 0 || !S_ISREG(out.st_mode)) return;
  if (const std::string* in = input_that_is(out, inputs))
    throw OutputError("<stdout>: is the input file " + shown_input(*in) +
                      " (redirected onto it with > or >>): refusing to write onto it");
}

// ---- LimitStreamBuf ----------------------------------------------------------------------

LimitStreamBuf::LimitStreamBuf(std::streambuf* next, uint64_t limit, std::string message)
    : next_(next), limit_(limit), message_(std::move(message)) {}

std::streambuf::int_type LimitStreamBuf::overflow(int_type c) {
  if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
  char ch = traits_type::to_char_type(c);
  return xsputn(&ch, 1) == 1 ? c : traits_type::eof();
}

std::streamsize LimitStreamBuf::xsputn(const char* s, std::streamsize n) {
  if (n <= 0) return 0;
  if (passed_ + uint64_t(n) > limit_) throw OutputLimitExceeded(message_);
  passed_ += uint64_t(n);
  return next_->sputn(s, n);
}

int LimitStreamBuf::sync() {
  return next_->pubsync();
}

// ---- OutputFile --------------------------------------------------------------------------

OutputFile::OutputFile(const std::string& path, std::span<const std::string> inputs) : path_(path) {
  if (path.empty()) throw OutputError("the output path is empty");
  if (is_stdout()) {
    refuse_stdout_onto_inputs(inputs);
    stream_ = &std::cout;
    return;
  }

  // Where the file ends up: through a symbolic link to the file it names.
  target_ = path;
  struct stat lst {};
  if (::lstat(path.c_str(), &lst) == 0 && S_ISLNK(lst.st_mode)) {
    if (char* real = ::realpath(path.c_str(), nullptr)) {
      target_ = real;
      std::free(real);
    }
  }
  struct stat st {};
  bool exists = ::stat(target_.c_str(), &st) == 0;
  if (const std::string* in = exists ? input_that_is(st, inputs) : nullptr)
    throw OutputError(path + ": is the input file " + shown_input(*in) + ": refusing to write onto it");
  if (exists && S_ISDIR(st.st_mode)) throw OutputError(path + ": is a directory");

  if (exists && !S_ISREG(st.st_mode)) {
    // A device or a FIFO (/dev/null, a named pipe): there is nothing to replace atomically.
    fd_ = ::open(target_.c_str(), O_WRONLY | O_CLOEXEC | O_TRUNC);
    if (fd_ < 0) throw OutputError(path + ": cannot write: " + reason(errno));
  } else {
    std::string dir = ".", base = target_;
    if (auto slash = target_.rfind('/'); slash != std::string::npos) {
      dir = slash == 0 ? "/" : target_.substr(0, slash);
      base = target_.substr(slash + 1);
    }
    if (base.empty()) throw OutputError(path + ": not a file name");
    std::string tmpl = (dir == "/" ? "" : dir) + "/." + base + ".memsnap-XXXXXX";
    std::vector<char> name(tmpl.begin(), tmpl.end());
    name.push_back('\0');
    // The file and its cleanup slot appear together: a signal in between would leave it behind.
    install_handlers();
    sigset_t block, old;
    sigemptyset(&block);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaddset(&block, sig);
    pthread_sigmask(SIG_BLOCK, &block, &old);
    fd_ = ::mkostemp(name.data(), O_CLOEXEC);
    int err = errno;
    if (fd_ >= 0) {
      temp_ = name.data();
      slot_ = claim_slot(temp_);
    }
    pthread_sigmask(SIG_SETMASK, &old, nullptr);  // a signal that came meanwhile is handled now
    if (fd_ < 0) throw OutputError(path + ": cannot write: " + reason(err));
    // The permissions a plain open() would give, or those of the file it replaces.
    ::fchmod(fd_, exists ? (st.st_mode & 07777) : default_mode());
  }
  buf_ = std::make_unique<FdStreamBuf>(fd_);
  own_stream_ = std::make_unique<std::ostream>(buf_.get());
  stream_ = own_stream_.get();
}

OutputFile::OutputFile(std::ostream& stream, std::string name) : path_(std::move(name)), stream_(&stream) {
  external_ = true;
}

OutputFile::~OutputFile() {
  if (committed_ || is_stdout()) return;
  if (fd_ >= 0) ::close(fd_);
  if (!temp_.empty()) ::unlink(temp_.c_str());
  release_slot(slot_);
}

uint64_t OutputFile::bytes_written() const {
  if (buf_) return buf_->bytes_written();
  return 0;
}

void OutputFile::commit() {
  if (committed_) return;
  if (external_) {
    stream_->flush();
    if (!*stream_) throw OutputError(path_ + ": cannot write");
    committed_ = true;
    return;
  }
  if (is_stdout()) {
    std::cout.flush();
    FdStreamBuf* checked = CheckedStdout::current();
    if (checked && !checked->flush_buffer()) throw OutputError("<stdout>: cannot write: " + reason(checked->error()));
    if (!std::cout) throw OutputError("<stdout>: cannot write");
    committed_ = true;
    return;
  }
  auto fail = [&](int err) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!temp_.empty()) ::unlink(temp_.c_str());
    release_slot(slot_);
    slot_ = -1;
    committed_ = true;  // nothing left to clean up
    throw OutputError(path_ + ": cannot write: " + reason(err));
  };
  stream_->flush();
  if (!buf_->flush_buffer()) fail(buf_->error());
  if (!*stream_) fail(EIO);
  if (!temp_.empty() && ::fsync(fd_) != 0 && errno != EINVAL && errno != EROFS) fail(errno);
  int fd = fd_;
  fd_ = -1;
  if (::close(fd) != 0 && errno != EINTR) fail(errno);
  if (!temp_.empty() && ::rename(temp_.c_str(), target_.c_str()) != 0) fail(errno);
  release_slot(slot_);
  slot_ = -1;
  committed_ = true;
}

// ---- CheckedStdout -----------------------------------------------------------------------

namespace {
std::atomic<FdStreamBuf*> g_checked_stdout{nullptr};
}

CheckedStdout::CheckedStdout() : buf_(STDOUT_FILENO) {
  previous_ = std::cout.rdbuf(&buf_);
  g_checked_stdout = &buf_;
}

CheckedStdout::~CheckedStdout() {
  buf_.flush_buffer();
  std::cout.rdbuf(previous_);
  g_checked_stdout = nullptr;
}

FdStreamBuf* CheckedStdout::current() {
  return g_checked_stdout.load();
}

void CheckedStdout::finish() {
  std::cout.flush();
  if (!buf_.flush_buffer()) throw OutputError("<stdout>: cannot write: " + reason(buf_.error()));
  if (!std::cout) throw OutputError("<stdout>: cannot write");
}

}  // namespace memsnap::io
