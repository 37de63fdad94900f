// Out-of-line constructors and throw helpers for memsnap's error types.
#include "memsnap/util/error.hpp"

namespace memsnap {

namespace {
std::string join(const std::string& location, const std::string& message) {
  if (location.empty()) return message;
  std::string out;
  out.reserve(location.size() + 2 + message.size());
  out.append(location).append(": ").append(message);
  return out;
}
}  // namespace

InputError::InputError(std::string location, const std::string& message)
    : std::runtime_error(join(location, message)), location_(std::move(location)), message_(message) {}

void throw_at_offset(uint64_t offset, const std::string& message) {
  throw InputError("offset " + std::to_string(offset), message);
}

void throw_at_path(const std::string& path, const std::string& message) {
  throw InputError(path, message);
}

}  // namespace memsnap
