// The version string, defined where MEMSNAP_VERSION (CMakeLists.txt) is visible.
#include "memsnap/util/version.hpp"

namespace memsnap {
const char* const kVersion = MEMSNAP_VERSION;
}  // namespace memsnap
