// ByteSource: plain, gzip and zstd input; truncation, corruption and size limits; encoding detection.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "memsnap/io/byte_source.hpp"
#include "memsnap/pickle/unpickler.hpp"
#include "memsnap/util/error.hpp"
#include "support/compress.hpp"
#include "support/testdata.hpp"

using memsnap::InputError;
using namespace memsnap::io;

namespace {

// A pickle of a few thousand integers: compresses well, decompresses to well over 1000 bytes.
std::vector<uint8_t> sample_pickle() {
  std::vector<uint8_t> p = {0x80, 0x04, ']', '('};
  for (int i = 0; i < 3000; ++i) {
    p.push_back('M');  // BININT2
    p.push_back(uint8_t(i));
    p.push_back(uint8_t(i >> 8));
  }
  p.push_back('e');
  p.push_back('.');
  return p;
}

using memsnap::test::gzip_of;
using memsnap::test::zstd_of;

InputError error_of(std::vector<uint8_t> bytes, const ReadOptions& options = {}) {
  try {
    ByteSource::from_bytes(std::move(bytes), options);
  } catch (const InputError& e) {
    return e;
  }
  FAIL("no InputError was thrown");
  return InputError("", "");
}

InputError open_error(const std::string& path) {
  try {
    ByteSource::open(path);
  } catch (const InputError& e) {
    return e;
  }
  FAIL("no InputError was thrown for " << path);
  return InputError("", "");
}

bool contains(const std::string& s, const char* fragment) {
  return s.find(fragment) != std::string::npos;
}

}  // namespace

TEST_CASE("detect_compression and to_string") {
  CHECK(detect_compression(std::vector<uint8_t>{0x1f, 0x8b, 0x08}) == Compression::Gzip);
  CHECK(detect_compression(std::vector<uint8_t>{0x28, 0xb5, 0x2f, 0xfd}) == Compression::Zstd);
  CHECK(detect_compression(std::vector<uint8_t>{0x28, 0xb5, 0x2f}) == Compression::None);
  CHECK(detect_compression(std::vector<uint8_t>{0x1f}) == Compression::None);
  CHECK(detect_compression(std::vector<uint8_t>{0x80, 0x04}) == Compression::None);
  CHECK(std::string(to_string(Compression::Gzip)) == "gzip");
  CHECK(std::string(to_string(Compression::Zstd)) == "zstd");
  CHECK(std::string(to_string(Compression::None)) == "none");
  CHECK(std::string(to_string(Encoding::Json)) == "json");
  CHECK(std::string(to_string(Encoding::Pickle)) == "pickle");
}

TEST_CASE("from_bytes decompresses gzip and zstd") {
  const std::vector<uint8_t> plain = sample_pickle();
  SUBCASE("plain bytes pass through") {
    ByteSource s = ByteSource::from_bytes(plain);
    CHECK(s.compression() == Compression::None);
    CHECK(std::vector<uint8_t>(s.data().begin(), s.data().end()) == plain);
    CHECK(s.stored_bytes() == plain.size());
  }
  SUBCASE("gzip") {
    auto gz = gzip_of(plain);
    ByteSource s = ByteSource::from_bytes(gz);
    CHECK(s.compression() == Compression::Gzip);
    CHECK(s.stored_bytes() == gz.size());
    CHECK(std::vector<uint8_t>(s.data().begin(), s.data().end()) == plain);
    auto g = memsnap::pickle::unpickle(s.data());
    CHECK(g.items(g.root()).size() == 3000);
  }
  SUBCASE("concatenated gzip members") {
    auto gz = gzip_of(plain);
    auto more = gzip_of(std::vector<uint8_t>{'x', 'y'});
    gz.insert(gz.end(), more.begin(), more.end());
    ByteSource s = ByteSource::from_bytes(gz);
    auto want = plain;
    want.push_back('x');
    want.push_back('y');
    CHECK(std::vector<uint8_t>(s.data().begin(), s.data().end()) == want);
  }
  SUBCASE("zstd with and without a recorded content size") {
    for (bool sized : {true, false}) {
      CAPTURE(sized);
      auto zs = zstd_of(plain, sized);
      ByteSource s = ByteSource::from_bytes(zs);
      CHECK(s.compression() == Compression::Zstd);
      CHECK(s.stored_bytes() == zs.size());
      CHECK(std::vector<uint8_t>(s.data().begin(), s.data().end()) == plain);
    }
  }
  SUBCASE("moving a ByteSource keeps its data") {
    ByteSource a = ByteSource::from_bytes(gzip_of(plain));
    ByteSource b = std::move(a);
    CHECK(b.data().size() == plain.size());
  }
}

TEST_CASE("large decompressed input survives every growth of the output buffer") {
  // 7 MB crosses the output buffer's move from the heap to its own mapping (2 MiB) and
  // several mapped growths; every byte is distinct by position so a lost or shifted page shows.
  std::vector<uint8_t> big(7'000'003);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  SUBCASE("gzip") {
    ByteSource s = ByteSource::from_bytes(gzip_of(big));
    REQUIRE(s.data().size() == big.size());
    CHECK(std::equal(big.begin(), big.end(), s.data().begin()));
  }
  SUBCASE("zstd without a recorded content size") {
    ByteSource s = ByteSource::from_bytes(zstd_of(big, false));
    REQUIRE(s.data().size() == big.size());
    CHECK(std::equal(big.begin(), big.end(), s.data().begin()));
  }
}

TEST_CASE("the committed compressed fixtures decode to a pickle") {
  for (const char* name : {"snapgen/train_gz.pickle.gz", "snapgen/train_zst.pickle.zst"}) {
    CAPTURE(name);
    auto path = memsnap::test::testdata(name);
    ByteSource s = ByteSource::open(path.string());
    CHECK(s.compression() == (std::string(name).ends_with(".gz") ? Compression::Gzip : Compression::Zstd));
    CHECK(s.stored_bytes() == std::filesystem::file_size(path));
    REQUIRE(s.data().size() > 2);
    CHECK(s.data().front() == 0x80);
    CHECK(s.data().back() == '.');
    CHECK(s.encoding() == Encoding::Pickle);
    // The same decoded bytes whether read from a file or from memory.
    ByteSource m = ByteSource::from_bytes(memsnap::test::read_bytes(path));
    CHECK(std::vector<uint8_t>(m.data().begin(), m.data().end()) ==
          std::vector<uint8_t>(s.data().begin(), s.data().end()));
    memsnap::pickle::PickleInfo info;
    CHECK_NOTHROW(memsnap::pickle::unpickle(s.data(), &info));
    CHECK(info.stop_offset == s.data().size() - 1);
  }
}

TEST_CASE("truncated and corrupt compressed input") {
  auto gz = memsnap::test::read_bytes(memsnap::test::testdata("snapgen/train_gz.pickle.gz"));
  auto zs = memsnap::test::read_bytes(memsnap::test::testdata("snapgen/train_zst.pickle.zst"));
  REQUIRE(gz.size() > 100);
  REQUIRE(zs.size() > 100);
  SUBCASE("gzip cut in half") {
    std::vector<uint8_t> half(gz.begin(), gz.begin() + ptrdiff_t(gz.size() / 2));
    InputError e = error_of(half);
    CHECK(e.location() == "offset " + std::to_string(half.size()));
    CHECK_MESSAGE(contains(e.message(), "truncated gzip"), e.message());
  }
  SUBCASE("gzip without its trailer") {
    std::vector<uint8_t> cut(gz.begin(), gz.end() - 4);
    CHECK_MESSAGE(contains(error_of(cut).message(), "truncated gzip"), error_of(cut).message());
  }
  SUBCASE("zstd cut in half") {
    std::vector<uint8_t> half(zs.begin(), zs.begin() + ptrdiff_t(zs.size() / 2));
    InputError e = error_of(half);
    CHECK(e.location().starts_with("offset "));
    CHECK_MESSAGE(contains(e.message(), "zstd"), e.message());
  }
  SUBCASE("corrupt gzip: unknown compression method") {
    auto bad = gz;
    bad[2] = 0x07;
    InputError e = error_of(bad);
    CHECK(e.location().starts_with("offset "));
    CHECK_MESSAGE(contains(e.message(), "corrupt gzip data"), e.message());
  }
  SUBCASE("corrupt gzip: wrong CRC") {
    auto bad = gz;
    bad[bad.size() - 8] ^= 0xFF;
    InputError e = error_of(bad);
    CHECK_MESSAGE(contains(e.message(), "corrupt gzip data: incorrect data check"), e.message());
  }
  SUBCASE("corrupt zstd: reserved frame header bit") {
    auto bad = zs;
    bad[4] |= 0x08;
    InputError e = error_of(bad);
    CHECK_MESSAGE(contains(e.message(), "corrupt zstd data"), e.message());
  }
}

TEST_CASE("decompressed size above ReadOptions.max_buffer_bytes") {
  ReadOptions options;
  options.max_buffer_bytes = 1000;
  const std::vector<uint8_t> plain = sample_pickle();
  REQUIRE(plain.size() > 1000);
  SUBCASE("gzip") {
    InputError e = error_of(gzip_of(plain), options);
    CHECK_MESSAGE(contains(e.message(), "exceeds the in-memory limit of 1000 B"), e.message());
  }
  SUBCASE("zstd with content size") {
    InputError e = error_of(zstd_of(plain, true), options);
    CHECK_MESSAGE(contains(e.message(), "limit"), e.message());
  }
  SUBCASE("zstd without content size") {
    InputError e = error_of(zstd_of(plain, false), options);
    CHECK_MESSAGE(contains(e.message(), "limit"), e.message());
  }
  SUBCASE("the committed gzip fixture") {
    auto gz = memsnap::test::read_bytes(memsnap::test::testdata("snapgen/train_gz.pickle.gz"));
    CHECK_MESSAGE(contains(error_of(gz, options).message(), "limit"), error_of(gz, options).message());
  }
  SUBCASE("data that fits is accepted") {
    std::vector<uint8_t> small(900, 'a');
    ByteSource s = ByteSource::from_bytes(gzip_of(small), options);
    CHECK(s.data().size() == 900);
  }
}

TEST_CASE("ByteSource::open: plain files, missing paths, directories") {
  SUBCASE("a plain file is mapped as is") {
    auto path = memsnap::test::testdata("pickle/values_p2.pickle");
    ByteSource s = ByteSource::open(path.string());
    CHECK(s.compression() == Compression::None);
    auto bytes = memsnap::test::read_bytes(path);
    CHECK(std::vector<uint8_t>(s.data().begin(), s.data().end()) == bytes);
    CHECK(s.stored_bytes() == bytes.size());
  }
  SUBCASE("an empty file") {
    ByteSource s = ByteSource::open(memsnap::test::testdata("bad/empty.pickle").string());
    CHECK(s.data().empty());
  }
  SUBCASE("a missing path") {
    InputError e = open_error(memsnap::test::testdata("no/such/file.pickle").string());
    CHECK_MESSAGE(contains(e.message(), "cannot open"), e.message());
  }
  SUBCASE("a directory") {
    InputError e = open_error(memsnap::test::testdata("pickle").string());
    CHECK_MESSAGE(contains(e.message(), "is a directory"), e.message());
  }
}

TEST_CASE("encoding: JSON when the first non-blank byte opens an object or array") {
  auto enc = [](std::string_view s) {
    return ByteSource::from_bytes(std::vector<uint8_t>(s.begin(), s.end())).encoding();
  };
  CHECK(enc("  {\"segments\": []}") == Encoding::Json);
  CHECK(enc("\n\t[1]") == Encoding::Json);
  CHECK(enc("\x80\x04]") == Encoding::Pickle);
  CHECK(enc("") == Encoding::Pickle);
  CHECK(enc("   ") == Encoding::Pickle);
  CHECK(enc("hello") == Encoding::Pickle);
}

TEST_CASE("a mapped file that shrinks while it is read: an input error, not SIGBUS") {
  auto bytes = memsnap::test::read_bytes(memsnap::test::testdata("snapgen/train.pickle"));
  REQUIRE(bytes.size() > 3 * 4096);
  auto path = std::filesystem::temp_directory_path() / ("memsnap_shrink_" + std::to_string(::getpid()) + ".pickle");
  {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }
  ByteSource s = ByteSource::open(path.string());
  CHECK_NOTHROW(s.check_intact());
  std::filesystem::resize_file(path, 1000);  // what _dump_snapshot rewriting in place does
  uint64_t sum = 0;
  for (uint8_t b : s.data()) sum += b;  // touches every page, past the new end too
  CHECK(sum > 0);
  try {
    s.check_intact();
    FAIL("no InputError");
  } catch (const InputError& e) {
    CHECK(e.location() == "offset 4096");
    CHECK_MESSAGE(contains(e.message(), "shrank"), e.message());
  }
  std::filesystem::remove(path);
}

TEST_CASE("UTF-8 byte order mark and UTF-16 text") {
  std::vector<uint8_t> bom = {0xEF, 0xBB, 0xBF, '{', '}'};
  ByteSource s = ByteSource::from_bytes(bom);
  CHECK(s.encoding() == Encoding::Json);
  CHECK(utf8_bom(s.data()) == 3);
  CHECK_NOTHROW(s.check_text_encoding());
  for (auto text : {std::vector<uint8_t>{0xFF, 0xFE, '{', 0}, std::vector<uint8_t>{'{', 0, '"', 0}}) {
    ByteSource u = ByteSource::from_bytes(text);
    try {
      u.check_text_encoding();
      FAIL("no InputError");
    } catch (const InputError& e) {
      CHECK(e.location() == "offset 0");
      CHECK_MESSAGE(contains(e.message(), "UTF-16 (little-endian)"), e.message());
    }
  }
}

namespace {

ReadOptions streaming(size_t chunk, uint64_t limit = uint64_t{16} << 30) {
  ReadOptions o;
  o.stream = true;
  o.stream_chunk = chunk;
  o.max_buffer_bytes = limit;
  return o;
}

// The error a streaming source reports from data(); it must not throw before.
InputError stream_error_of(const std::vector<uint8_t>& bytes, const ReadOptions& options) {
  ByteSource s = ByteSource::from_bytes(bytes, options);
  CHECK(s.streaming());
  try {
    (void)s.data();
  } catch (const InputError& e) {
    return e;
  }
  FAIL("no InputError was thrown by data()");
  return InputError("", "");
}

}  // namespace

TEST_CASE("streaming: the decoder on its own thread gives the same bytes as decoding first") {
  std::vector<uint8_t> big(7'000'003);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>((i * 2654435761u) >> 13);
  const std::vector<uint8_t> small = sample_pickle();
  struct Case {
    const char* name;
    const std::vector<uint8_t>* plain;
    std::vector<uint8_t> stored;
    size_t chunk;
  };
  std::vector<Case> cases = {{"gzip, small, 1-byte chunks", &small, gzip_of(small), 1},
                             {"zstd, small, 7-byte chunks", &small, zstd_of(small, false), 7},
                             {"gzip, 7 MB", &big, gzip_of(big), 4096},
                             {"zstd, 7 MB, sized", &big, zstd_of(big, true), 65536},
                             {"zstd, 7 MB, default chunks", &big, zstd_of(big, false), size_t{4} << 20}};
  for (const Case& c : cases) {
    CAPTURE(c.name);
    ByteSource s = ByteSource::from_bytes(c.stored, streaming(c.chunk));
    REQUIRE(s.streaming());
    CHECK(s.stored_bytes() == c.stored.size());
    // What has arrived is already final: a prefix of the decoded bytes.
    size_t n = s.wait_for(5000);
    CHECK(n >= std::min<size_t>(5000, c.plain->size()));
    CHECK(std::equal(s.begin(), s.begin() + n, c.plain->begin()));
    CHECK(s.encoding() == Encoding::Pickle);
    REQUIRE(s.data().size() == c.plain->size());
    CHECK(std::equal(c.plain->begin(), c.plain->end(), s.data().begin()));
    CHECK(s.wait_for(SIZE_MAX) == c.plain->size());
    CHECK(s.decoded_size() == std::optional<uint64_t>(c.plain->size()));
    ByteSource moved = std::move(s);
    CHECK(moved.data().size() == c.plain->size());
  }
  SUBCASE("a source dropped before it is read stops its decoder") {
    // Must return promptly: the decoder sees the cancel between chunks (a hang fails the run).
    for (int i = 0; i < 20; ++i) ByteSource::from_bytes(zstd_of(big, false), streaming(64));
  }
  SUBCASE("a compressed file opened from disk") {
    auto path = memsnap::test::testdata("snapgen/train_zst.pickle.zst");
    ByteSource s = ByteSource::open(path.string(), streaming(1000));
    ByteSource whole = ByteSource::open(path.string());
    CHECK(s.streaming());
    CHECK_FALSE(whole.streaming());
    CHECK(std::vector<uint8_t>(s.data().begin(), s.data().end()) ==
          std::vector<uint8_t>(whole.data().begin(), whole.data().end()));
  }
}

TEST_CASE("a streamed compressed input waits for its reader: the encoding from the first bytes alone") {
  auto text = [](const std::string& t) { return std::vector<uint8_t>(t.begin(), t.end()); };
  SUBCASE("JSON, told by its first bytes, then read whole") {
    auto json = text("  {\"segments\": [], \"device_traces\": []}");
    ByteSource s = ByteSource::from_bytes(zstd_of(json, false), streaming(4096));
    CHECK_FALSE(s.decoded_size().has_value());  // not started
    CHECK(s.encoding() == Encoding::Json);
    CHECK_NOTHROW(s.check_text_encoding());
    CHECK_FALSE(s.decoded_size().has_value());  // still not: the head was decoded apart
    REQUIRE(s.data().size() == json.size());
    CHECK(std::equal(json.begin(), json.end(), s.data().begin()));
    CHECK(s.decoded_size() == std::optional<uint64_t>(json.size()));
    ByteSource g = ByteSource::from_bytes(gzip_of(json), streaming(4096));
    CHECK(g.encoding() == Encoding::Json);
    CHECK_FALSE(g.decoded_size().has_value());
    CHECK(g.data().size() == json.size());
  }
  SUBCASE("blank past the first 64 KiB: the second look reads it all") {
    std::vector<uint8_t> blank((size_t{64} << 10) + 10, ' ');
    blank.push_back('[');
    blank.push_back(']');
    ByteSource s = ByteSource::from_bytes(zstd_of(blank, true), streaming(4096));
    CHECK(s.encoding() == Encoding::Json);
  }
  SUBCASE("UTF-16 text is named") {
    std::vector<uint8_t> utf16 = {0xFF, 0xFE, '{', 0, '}', 0};
    ByteSource s = ByteSource::from_bytes(zstd_of(utf16, false), streaming(4096));
    CHECK_THROWS_AS(s.check_text_encoding(), InputError);
  }
  SUBCASE("a pickle cut short: the error the decoder that starts at once gives") {
    const std::vector<uint8_t> plain = sample_pickle();
    auto stored = zstd_of(plain, false);
    std::vector<uint8_t> cut(stored.begin(), stored.end() - 2);
    auto message = [&](bool waits) {
      ReadOptions o = streaming(4096);
      o.decode_window = waits;
      ByteSource s = ByteSource::from_bytes(cut, o);
      try {
        (void)s.encoding();
        (void)s.data();
      } catch (const InputError& e) {
        return e.location() + ": " + e.message();
      }
      return std::string("no error");
    };
    CHECK(message(true) == message(false));
    CHECK(contains(message(true), "truncated zstd stream"));
  }
}

TEST_CASE("streaming: every decoding error is the one decoding first gives, from data()") {
  auto gz = memsnap::test::read_bytes(memsnap::test::testdata("snapgen/train_gz.pickle.gz"));
  auto zs = memsnap::test::read_bytes(memsnap::test::testdata("snapgen/train_zst.pickle.zst"));
  auto with = [](std::vector<uint8_t> v, size_t at, uint8_t x) {
    v[at] ^= x;
    return v;
  };
  std::vector<std::pair<const char*, std::vector<uint8_t>>> bad = {
      {"gzip cut in half", std::vector<uint8_t>(gz.begin(), gz.begin() + ptrdiff_t(gz.size() / 2))},
      {"gzip without its trailer", std::vector<uint8_t>(gz.begin(), gz.end() - 4)},
      {"zstd cut in half", std::vector<uint8_t>(zs.begin(), zs.begin() + ptrdiff_t(zs.size() / 2))},
      {"gzip, unknown method", with(gz, 2, 0x07 ^ gz[2])},
      {"gzip, wrong CRC", with(gz, gz.size() - 8, 0xFF)},
      {"zstd, reserved header bit", with(zs, 4, 0x08)}};
  for (size_t chunk : {size_t{13}, size_t{4} << 20}) {
    for (const auto& [name, bytes] : bad) {
      CAPTURE(name);
      CAPTURE(chunk);
      InputError first = error_of(bytes);
      InputError streamed = stream_error_of(bytes, streaming(chunk));
      CHECK(streamed.location() == first.location());
      CHECK(streamed.message() == first.message());
    }
  }
  SUBCASE("the buffer limit") {
    const std::vector<uint8_t> plain = sample_pickle();
    for (auto stored : {gzip_of(plain), zstd_of(plain, false)}) {
      ReadOptions limited;
      limited.max_buffer_bytes = 1000;
      InputError first = error_of(stored, limited);
      InputError streamed = stream_error_of(stored, streaming(100, 1000));
      CHECK(streamed.message() == first.message());
    }
  }
}
