// memsnap's version and the JSON schema version its reports carry.
#pragma once

namespace memsnap {
/// The project's version (CMakeLists.txt), compiled into version.cpp alone, so a new version
/// rebuilds one file, not every file that prints it.
extern const char* const kVersion;
inline constexpr int kSchemaVersion = 1;
}  // namespace memsnap
