// AllCoresBusy (cores.hpp): a parallel section's scope, and what it means for the process-wide
// helpers: util::prefault's worker stands aside while any such scope lives.
#include "memsnap/util/cores.hpp"

#include "memsnap/util/prefault.hpp"

namespace memsnap::util {

AllCoresBusy::AllCoresBusy(bool on) : on_(on) {
  if (on_) pause_prefault(true);
}

AllCoresBusy::~AllCoresBusy() {
  if (on_) pause_prefault(false);
}

}  // namespace memsnap::util
