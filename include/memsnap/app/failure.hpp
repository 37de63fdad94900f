// How a command ends: its exit statuses and the one-line fatal error it ends with.
#pragma once

#include <stdexcept>
#include <string>

namespace memsnap::app {

/// Exit statuses (docs/usage.md, man page): 0 success, 1 a check failed, 2 usage or input
/// error, 3 an internal error (a bug in memsnap: please report it).
enum Exit : int { kOk = 0, kCheckFailed = 1, kBadInput = 2, kInternalError = 3 };

/// A fatal, already-worded error: printed as "memsnap: <message>" with `code`.
class Failure : public std::runtime_error {
 public:
  Failure(const std::string& message, int code) : std::runtime_error(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

/// How a command that threw ends; call it inside a `catch (...)`. Prints the one line on
/// stderr, "memsnap: <message>" for a Failure or a UsageError (stdout flushed first), the
/// out-of-memory line, or "memsnap: internal error: ..." for any other std::exception, and
/// returns the exit status. An exception of no std type goes on (std::terminate, as before).
int report_failure();

}  // namespace memsnap::app
