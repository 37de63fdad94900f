// What every memsnap command shares: output options, loading with file-named errors, exit codes.
#pragma once

#include <CLI/CLI.hpp>
#include <optional>
#include <stdexcept>
#include <string>

#include "memsnap/analysis/replay.hpp"
#include "memsnap/report/analyze.hpp"
#include "memsnap/snapshot/load.hpp"

namespace memsnap::cli {

enum Exit : int { kOk = 0, kCheckFailed = 1, kBadInput = 2 };

/// A fatal, already-worded error: printed as "memsnap: <message>" with `code`.
class Failure : public std::runtime_error {
 public:
  Failure(const std::string& message, int code) : std::runtime_error(message), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

enum class Format { Text, Json };

struct CommonOptions {
  Format format = Format::Text;
  bool no_color = false;
  std::string max_memory = "4GiB";
};

/// Which device and which moment a command looks at: --device, --at, --at-time.
struct StateOptions {
  std::optional<int> device;
  std::optional<uint64_t> at;
  std::optional<int64_t> at_time;
};
void add_state_options(CLI::App& cmd, StateOptions& options);
/// The event --at / --at-time names on one device (nullopt: the dumped state). Failure when out of range.
std::optional<uint32_t> resolve_at(const StateOptions& options, const snapshot::Device& device);
/// Failure when --device names a device the snapshot does not have.
void check_device(const StateOptions& options, const snapshot::Snapshot& snap);
/// Whether --device leaves this device in.
bool selected(const StateOptions& options, const snapshot::Device& device);

/// The state of one device that a command describes: as dumped, or rebuilt by
/// replay at the event --at / --at-time names (then `at` says which; the rebuilt
/// device keeps the dumped trace, which still describes the file). `replay` is
/// used when given, else built only if an event is named.
struct DeviceState {
  snapshot::Device device;
  std::optional<report::AtPoint> at;
};
DeviceState device_state(const StateOptions& options, const snapshot::Snapshot& snap, const snapshot::Device& dumped,
                         const analysis::Replay* replay = nullptr);

/// The FILE positional every single-snapshot command takes.
void add_file_option(CLI::App& cmd, std::string& file);

/// Adds --format, --no-color and --max-memory to a subcommand.
void add_common_options(CLI::App& cmd, CommonOptions& options);
/// Loads a snapshot; any InputError becomes a Failure naming the file.
snapshot::Loaded load(const std::string& path, const CommonOptions& options);
/// Terminal width and colour for stdout.
report::TextStyle text_style(const CommonOptions& options);
/// Prints the snapshot's warnings to stderr as "memsnap: warning: FILE: ...".
void print_warnings(const snapshot::Loaded& loaded);

void add_analyze(CLI::App& app);
void add_diff(CLI::App& app);
void add_segments(CLI::App& app);
void add_timeline(CLI::App& app);

}  // namespace memsnap::cli
