// io::OutputFile: a file appears only when complete, a failure leaves the old one, inputs are refused.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "memsnap/io/output_file.hpp"

namespace fs = std::filesystem;
using memsnap::io::OutputError;
using memsnap::io::OutputFile;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "memsnap-out-XXXXXX").string();
    REQUIRE(::mkdtemp(t.data()) != nullptr);
    path = t;
  }
  ~TempDir() { fs::remove_all(path); }
  size_t entries() const { return static_cast<size_t>(std::distance(fs::directory_iterator(path), {})); }
};

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write(const fs::path& p, const std::string& s) {
  std::ofstream(p, std::ios::binary) << s;
}

std::string error_of(const std::string& path, std::vector<std::string> inputs = {}) {
  try {
    OutputFile f(path, inputs);
  } catch (const OutputError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST_CASE("the target appears only at commit, complete, with the usual permissions") {
  TempDir d;
  fs::path out = d.path / "out.json";
  {
    OutputFile f(out.string());
    f.stream() << std::string(200000, 'x');  // more than one buffer
    CHECK(!fs::exists(out));                 // still a temporary file
    CHECK(d.entries() == 1);
    f.commit();
  }
  CHECK(read(out) == std::string(200000, 'x'));
  CHECK(d.entries() == 1);
  mode_t mask = ::umask(0);
  ::umask(mask);
  CHECK((fs::status(out).permissions() & fs::perms::all) == fs::perms(0666 & ~mask));
}

TEST_CASE("without commit (an error, an exception) the old file is untouched and no temporary is left") {
  TempDir d;
  fs::path out = d.path / "mem.svg";
  write(out, "OLD");
  fs::permissions(out, fs::perms(0600));
  try {
    OutputFile f(out.string());
    f.stream() << "half a document";
    throw std::runtime_error("the analysis failed");
  } catch (const std::runtime_error&) {
  }
  CHECK(read(out) == "OLD");
  CHECK(d.entries() == 1);
  {  // a replaced file keeps its permissions
    OutputFile f(out.string());
    f.stream() << "NEW";
    f.commit();
  }
  CHECK(read(out) == "NEW");
  CHECK((fs::status(out).permissions() & fs::perms::all) == fs::perms(0600));
}

TEST_CASE("writing onto an input is refused, by inode: same name, other spelling, symbolic and hard links") {
  TempDir d;
  fs::path in = d.path / "snap.pickle";
  write(in, "SNAPSHOT");
  fs::create_symlink(in, d.path / "link.pickle");
  fs::create_hard_link(in, d.path / "hard.pickle");
  std::string msg = ": is the input file " + in.string() + ": refusing to write onto it";
  CHECK(error_of(in.string(), {in.string()}) == in.string() + msg);
  std::string other = (d.path / "." / "snap.pickle").string();
  CHECK(error_of(other, {in.string()}) == other + msg);
  CHECK(error_of((d.path / "link.pickle").string(), {in.string()}) == (d.path / "link.pickle").string() + msg);
  CHECK(error_of((d.path / "hard.pickle").string(), {in.string()}) == (d.path / "hard.pickle").string() + msg);
  CHECK(read(in) == "SNAPSHOT");
  CHECK(error_of((d.path / "new.json").string(), {in.string(), "-"}) == "(no error)");
  // through a symbolic link to another file: that file is replaced, the link stays
  write(d.path / "target.txt", "T");
  fs::create_symlink(d.path / "target.txt", d.path / "to-target");
  {
    OutputFile f((d.path / "to-target").string());
    f.stream() << "via link";
    f.commit();
  }
  CHECK(fs::is_symlink(d.path / "to-target"));
  CHECK(read(d.path / "target.txt") == "via link");
}

namespace {
// Runs `fn` with descriptor `fd` (0 or 1) pointing at `path` (opened for appending), then puts it
// back: what `memsnap CMD - < X` and `memsnap CMD X >> X` give a process.
template <class Fn>
void with_descriptor_on(int fd, const fs::path& path, Fn fn) {
  int saved = ::dup(fd);
  REQUIRE(saved >= 0);
  int file = ::open(path.c_str(), fd == 0 ? O_RDONLY : O_WRONLY | O_APPEND);
  REQUIRE(file >= 0);
  ::dup2(file, fd);
  ::close(file);
  fn();
  ::dup2(saved, fd);
  ::close(saved);
}
}  // namespace

TEST_CASE("standard input and standard output are compared with the inputs by inode too") {
  TempDir d;
  fs::path in = d.path / "snap.pickle";
  write(in, "SNAPSHOT");
  // -o X when the input "-" is X (`memsnap flame - < X -o X`).
  std::string error;
  with_descriptor_on(0, in, [&] { error = error_of(in.string(), {"-"}); });
  CHECK(error == in.string() + ": is the input file <stdin>: refusing to write onto it");
  // Standard output appended onto an input (`memsnap flame X >> X`), named or read as "-".
  std::string named, through_stdin, other;
  with_descriptor_on(1, in, [&] {
    named = error_of("-", {in.string()});
    with_descriptor_on(0, in, [&] { through_stdin = error_of("-", {"-"}); });
    other = error_of("-", {(d.path / "other.pickle").string()});
  });
  CHECK(named ==
        "<stdout>: is the input file " + in.string() + " (redirected onto it with > or >>): refusing to write onto it");
  CHECK(through_stdin ==
        "<stdout>: is the input file <stdin> (redirected onto it with > or >>): refusing to write onto it");
  CHECK(other == "(no error)");
  CHECK(read(in) == "SNAPSHOT");
}

TEST_CASE("a directory, a missing directory, and a full device are errors naming the path and the reason") {
  TempDir d;
  CHECK(error_of(d.path.string()) == d.path.string() + ": is a directory");
  std::string missing = (d.path / "no" / "dir" / "x.svg").string();
  CHECK(error_of(missing) == missing + ": cannot write: No such file or directory");
  if (fs::exists("/dev/full")) {
    OutputFile f("/dev/full");
    f.stream() << std::string(100000, 'x');
    std::string what;
    try {
      f.commit();
    } catch (const OutputError& e) {
      what = e.what();
    }
    CHECK(what == "/dev/full: cannot write: No space left on device");
  }
  {  // devices are written directly, never replaced
    OutputFile f("/dev/null");
    f.stream() << "gone";
    f.commit();
    CHECK(fs::is_character_file("/dev/null"));
  }
}
