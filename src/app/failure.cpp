// The one-line fatal error a command ends with, and its exit status.
#include "memsnap/app/failure.hpp"

#include <iostream>
#include <new>

#include "memsnap/util/error.hpp"
#include "memsnap/util/terminal.hpp"

namespace memsnap::app {

int report_failure() {
  try {
    throw;
  } catch (const Failure& e) {
    std::cout.flush();
    std::cerr << "memsnap: " << terminal_safe(e.what()) << '\n';
    return e.code();
  } catch (const UsageError& e) {
    std::cout.flush();
    std::cerr << "memsnap: " << terminal_safe(e.what()) << '\n';
    return kBadInput;
  } catch (const std::bad_alloc&) {
    std::cerr << "memsnap: out of memory (raise --max-memory only if the machine has it)\n";
    return kBadInput;
  } catch (const std::exception& e) {
    std::cerr << "memsnap: internal error: " << terminal_safe(e.what())
              << " (a bug in memsnap; please report it with the command line)\n";
    return kInternalError;
  }
}

}  // namespace memsnap::app
