// What a parallel section tells the process: "my threads keep every core busy".
//
// The analysis layer runs devices (or the iteration search beside the replay) on every core;
// it says so with an AllCoresBusy scope and knows nothing of the memory machinery. The
// process-wide helpers below it decide what that means for them: util::prefault's worker
// stands aside (drops its queue and takes no request) while any such scope lives, since it
// would only take a core from a thread that faults the same pages itself (see prefault.hpp).
#pragma once

namespace memsnap::util {

/// While one lives (and `on`), this process's own threads occupy every core.
class AllCoresBusy {
 public:
  explicit AllCoresBusy(bool on = true);
  ~AllCoresBusy();
  AllCoresBusy(const AllCoresBusy&) = delete;
  AllCoresBusy& operator=(const AllCoresBusy&) = delete;

 private:
  bool on_;
};

}  // namespace memsnap::util
