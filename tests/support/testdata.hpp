// Paths and small readers shared by the unit tests.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace memsnap::test {

inline std::filesystem::path testdata(const std::string& rel) {
  return std::filesystem::path(MEMSNAP_TESTDATA) / rel;
}
/// ../shared/realdata, or the folder MEMSNAP_REALDATA in the environment names (tests only:
/// MEMSNAP_REALDATA=/nonexistent shows that the real-data tests skip rather than pass).
inline std::filesystem::path realdata() {
  if (const char* env = std::getenv("MEMSNAP_REALDATA"); env && *env) return std::filesystem::path(env);
  return std::filesystem::path(MEMSNAP_REALDATA);
}

/// How many test cases needed real data and found none: main() then exits 77, which the
/// unit_realdata ctest reports as skipped (a test that ran on nothing has not passed).
inline int& realdata_missing() {
  static int missing = 0;
  return missing;
}

/// The real file `name`, or nullopt (counted as missing, see realdata_missing) when absent.
inline std::optional<std::filesystem::path> realdata_file(const std::string& name) {
  auto p = realdata() / name;
  if (std::filesystem::exists(p)) return p;
  ++realdata_missing();
  MESSAGE("SKIPPED: " << p << " is absent");
  return std::nullopt;
}

inline nlohmann::json read_json_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in);
}

inline std::vector<uint8_t> read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

/// The real snapshots in ../shared/realdata (never copied into the project),
/// sorted; empty when the folder is absent (callers report that as skipped).
inline std::vector<std::filesystem::path> realdata_files() {
  std::vector<std::filesystem::path> files;
  if (!std::filesystem::is_directory(realdata())) return files;
  for (const auto& entry : std::filesystem::directory_iterator(realdata())) {
    auto ext = entry.path().extension();
    if (ext == ".pickle" || ext == ".pkl" || ext == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

/// Calls f(path) for every real snapshot, each under its file name as the doctest
/// context. When the folder is absent (or holds no snapshot) the test case counts as missing
/// its data (realdata_missing), so its ctest skips. Returns how many ran. Test cases that call
/// it belong to the "realdata" suite (TEST_CASE("..." * doctest::test_suite("realdata"))): the
/// unit_realdata ctest runs them, the others exclude them.
template <class F>
size_t each_realdata(F f) {
  auto files = realdata_files();
  if (files.empty()) {
    ++realdata_missing();
    MESSAGE("SKIPPED: " << realdata() << " holds no snapshot");
  }
  for (const auto& path : files) {
    CAPTURE(path.filename().string());
    f(path);
  }
  return files.size();
}

/// Calls f(path) for every snapgen fixture pickle in testdata/snapgen, sorted, each under its
/// file name as the doctest context; with `compressed_too` also the .pickle.gz and .pickle.zst
/// ones. Returns how many ran.
template <class F>
size_t each_snapgen_pickle(F f, bool compressed_too = false) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(testdata("snapgen"))) {
    std::string name = entry.path().filename().string();
    if (name.ends_with(".pickle") || (compressed_too && name.find(".pickle.") != std::string::npos))
      files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    CAPTURE(path.filename().string());
    f(path);
  }
  return files.size();
}

/// (snapshot file, truth file, snapgen arguments) rows of testdata/snapgen/MANIFEST.tsv.
struct ManifestRow {
  std::string file, truth, args;
};
inline std::vector<ManifestRow> snapgen_manifest() {
  std::vector<ManifestRow> rows;
  std::ifstream in(testdata("snapgen/MANIFEST.tsv"));
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    ManifestRow r;
    size_t a = line.find('\t'), b = line.find('\t', a + 1);
    r.file = line.substr(0, a);
    r.truth = line.substr(a + 1, b - a - 1);
    r.args = b == std::string::npos ? "" : line.substr(b + 1);
    rows.push_back(r);
  }
  return rows;
}

}  // namespace memsnap::test
