// SIGBUS guard: a mapped file that shrinks reads as zeros, and we say so.
//
// torch's _dump_snapshot rewrites the file in place; pages past the new end raise SIGBUS
// when touched. The handler maps a zero page over the faulting page of a registered
// mapping and records the offset; ByteSource::check_intact() turns that into an input error.
// Faults outside every registered mapping get the default action.
#include "sigbus_guard.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <mutex>

namespace memsnap::io {

namespace {

struct Guard {
  std::atomic<uintptr_t> begin{0};
  std::atomic<size_t> len{0};
  std::atomic<uint64_t> fault{UINT64_MAX};  // lowest faulting offset
};
constexpr int kGuards = 16;  // diff maps two files at once; a few to spare
Guard g_guards[kGuards];
struct sigaction g_previous;
std::once_flag g_installed;
long g_page = 4096;

void on_sigbus(int sig, siginfo_t* info, void* ctx) {
  auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (Guard& g : g_guards) {
    uintptr_t b = g.begin.load(std::memory_order_acquire);
    size_t n = g.len.load(std::memory_order_acquire);
    if (b == 0 || addr < b || addr >= b + n) continue;
    uintptr_t page = addr & ~uintptr_t(g_page - 1);
    void* r =
        mmap(reinterpret_cast<void*>(page), size_t(g_page), PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (r == MAP_FAILED) break;
    uint64_t off = page > b ? page - b : 0;
    uint64_t cur = g.fault.load();
    while (off < cur && !g.fault.compare_exchange_weak(cur, off)) {
    }
    return;
  }
  // Not ours: what would have happened without us.
  sigaction(SIGBUS, &g_previous, nullptr);
  if (g_previous.sa_flags & SA_SIGINFO && g_previous.sa_sigaction) {
    g_previous.sa_sigaction(sig, info, ctx);
  } else if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN) {
    g_previous.sa_handler(sig);
  } else {
    raise(SIGBUS);
  }
}

}  // namespace

int guard_mapping(const void* begin, size_t len) {
  std::call_once(g_installed, [] {
    g_page = sysconf(_SC_PAGESIZE);
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &g_previous);
  });
  for (int i = 0; i < kGuards; ++i) {
    uintptr_t expected = 0;
    if (g_guards[i].begin.compare_exchange_strong(expected, 1)) {  // claim the slot
      g_guards[i].fault.store(UINT64_MAX);
      g_guards[i].len.store(len, std::memory_order_release);
      g_guards[i].begin.store(reinterpret_cast<uintptr_t>(begin), std::memory_order_release);
      return i;
    }
  }
  return -1;  // more mappings than slots: unguarded, as before
}

void unguard(int slot) {
  if (slot < 0) return;
  g_guards[slot].len.store(0);
  g_guards[slot].begin.store(0, std::memory_order_release);
}

uint64_t guard_fault(int slot) {
  return g_guards[slot].fault.load();
}

}  // namespace memsnap::io
