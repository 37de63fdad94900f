// Paths and small readers shared by the unit tests.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace memsnap::test {

inline std::filesystem::path testdata(const std::string& rel) {
  return std::filesystem::path(MEMSNAP_TESTDATA) / rel;
}
inline std::filesystem::path realdata() {
  return std::filesystem::path(MEMSNAP_REALDATA);
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
/// context; reports the set as skipped when the folder is absent. Returns how many ran.
template <class F>
size_t each_realdata(F f) {
  auto files = realdata_files();
  if (files.empty()) MESSAGE("SKIPPED: " << realdata() << " is absent");
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
