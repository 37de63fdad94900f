// memsnap's version and the JSON schema version its reports carry.
#pragma once

namespace memsnap {
inline constexpr const char* kVersion = MEMSNAP_VERSION;
inline constexpr int kSchemaVersion = 1;
}  // namespace memsnap
