// Which files `memsnap mcp` may read: the paths named by --allow, resolved once, and each
// request's path resolved the same way (symbolic links, `..`) before it is compared with them.
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "memsnap/app/mcp_command.hpp"
#include "memsnap/util/terminal.hpp"

namespace memsnap::app {

namespace {

// realpath(3): the path with every symbolic link, `.` and `..` resolved; nullopt and errno.
std::optional<std::string> resolved(const std::string& path) {
  char* real = ::realpath(path.c_str(), nullptr);
  if (!real) return std::nullopt;
  std::string out(real);
  std::free(real);
  return out;
}

// The path made absolute and `.`/`..` folded by its text alone (no link followed): where the
// request points before links are resolved, to tell "outside" from "missing inside".
std::string lexical(const std::string& path) {
  std::string base;
  if (path.empty() || path[0] != '/') {
    char cwd[PATH_MAX];
    if (::getcwd(cwd, sizeof cwd)) base = cwd;
  }
  std::vector<std::string> parts;
  std::string whole = base + "/" + path, part;
  for (size_t i = 0; i <= whole.size(); ++i) {
    if (i < whole.size() && whole[i] != '/') {
      part += whole[i];
      continue;
    }
    if (part == "..") {
      if (!parts.empty()) parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    part.clear();
  }
  std::string out;
  for (const auto& p : parts) out += "/" + p;
  return out.empty() ? "/" : out;
}

}  // namespace

PathGuard::PathGuard(const std::vector<std::string>& allowed) {
  for (const auto& a : allowed) {
    auto real = resolved(a);
    if (!real) throw Failure("--allow " + terminal_safe(a) + ": " + std::strerror(errno), kBadInput);
    struct stat st {};
    if (::stat(real->c_str(), &st) != 0) throw Failure("--allow " + terminal_safe(a) + ": cannot stat", kBadInput);
    Root r{*real, S_ISDIR(st.st_mode)};
    if (r.path.size() > 1 && r.path.back() == '/') r.path.pop_back();
    roots_.push_back(std::move(r));
  }
  if (roots_.empty())
    throw Failure("mcp: --allow PATH is required (the files or directories tools may read)", kBadInput);
}

bool PathGuard::inside(const std::string& p) const {
  for (const auto& r : roots_) {
    if (p == r.path) return true;
    if (!r.directory) continue;
    if (r.path == "/") return true;
    if (p.size() > r.path.size() && p.compare(0, r.path.size(), r.path) == 0 && p[r.path.size()] == '/') return true;
  }
  return false;
}

std::string PathGuard::describe() const {
  std::string out;
  for (const auto& r : roots_) out += (out.empty() ? "" : ", ") + r.path + (r.directory ? "/" : "");
  return out;
}

std::string PathGuard::check(const std::string& path) const {
  std::string shown = terminal_safe(path);
  auto refuse = [&](const std::string& why) -> Failure { return Failure(shown + ": " + why, kBadInput); };
  if (path.empty()) throw refuse("an empty path");
  if (path == "-") throw refuse("standard input is the protocol's: name a file");
  if (path.find('\0') != std::string::npos) throw refuse("a path with a NUL byte");
  if (path.size() > PATH_MAX) throw refuse("a path longer than " + std::to_string(PATH_MAX) + " bytes");
  const std::string outside = "outside the allowed paths (" + describe() + ")";
  auto real = resolved(path);
  if (!real) {
    int err = errno;
    // Only a path that points inside (by its text) learns why it cannot be read.
    if (!inside(lexical(path))) throw refuse(outside);
    throw refuse(std::strerror(err));
  }
  if (!inside(*real))
    throw refuse(inside(lexical(path)) ? outside + ", through a symbolic link to " + terminal_safe(*real) : outside);
  struct stat st {};
  if (::stat(real->c_str(), &st) != 0) throw refuse(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw refuse("not a regular file");
  return *real;
}

}  // namespace memsnap::app
