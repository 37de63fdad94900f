// Error types: every failure the library reports to a user is an InputError with a location.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace memsnap {

/// A problem with the input (unreadable file, malformed pickle, wrong schema).
/// `location` is "offset N" for byte-level errors, a snapshot path such as
/// "segments[3].blocks[2].size" for schema errors, or empty. what() joins both.
class InputError : public std::runtime_error {
 public:
  InputError(std::string location, const std::string& message);
  const std::string& location() const { return location_; }
  const std::string& message() const { return message_; }

 private:
  std::string location_;
  std::string message_;
};

/// A problem with how memsnap was invoked (bad option value); exit status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throw_at_offset(uint64_t offset, const std::string& message);
[[noreturn]] void throw_at_path(const std::string& path, const std::string& message);

}  // namespace memsnap
