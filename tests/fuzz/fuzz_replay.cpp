// Replays fuzz inputs (files or directories of files) through both fuzz targets' entry points
// (fuzz_snapshot.cpp, fuzz_json.cpp): a ctest, no libFuzzer needed.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" int MemsnapFuzzJson(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  size_t n = 0;
  for (int i = 1; i < argc; ++i) {
    std::vector<std::filesystem::path> files;
    if (std::filesystem::is_directory(argv[i])) {
      // testdata/fleet's 64 ranks are one small training run each, the shape testdata/snapgen's
      // train fixtures already give the targets: left to the fleet tests.
      for (auto it = std::filesystem::recursive_directory_iterator(argv[i]); it != decltype(it){}; ++it) {
        if (it->is_directory() && it->path().filename() == "fleet") {
          it.disable_recursion_pending();
        } else if (it->is_regular_file()) {
          files.push_back(it->path());
        }
      }
    } else {
      files.push_back(argv[i]);
    }
    for (const auto& f : files) {
      std::ifstream in(f, std::ios::binary);
      std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
      LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
      MemsnapFuzzJson(bytes.data(), bytes.size());
      ++n;
    }
  }
  std::printf("replayed %zu inputs through both targets\n", n);
  return n ? 0 : 1;
}
