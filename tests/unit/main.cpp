// doctest's main for memsnap_unit, with two rules doctest does not have:
// - a test case that ran without a single assertion fails the run: it proves nothing;
// - a test case that needed ../shared/realdata and found none (test::realdata_missing) makes
//   the run exit 77, which ctest reports as skipped (SKIP_RETURN_CODE), never as passed; with
//   MEMSNAP_NO_SKIP=1 in the environment (.ci/run, where ../shared is present) it fails instead.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "support/testdata.hpp"

namespace {

std::vector<std::string>& empty_test_cases() {
  static std::vector<std::string> names;
  return names;
}

// Records each test case whose run (all its subcases) made no assertion.
struct NoEmptyTestCases : doctest::IReporter {
  explicit NoEmptyTestCases(const doctest::ContextOptions&) {}
  void report_query(const doctest::QueryData&) override {}
  void test_run_start() override {}
  void test_run_end(const doctest::TestRunStats&) override {}
  void test_case_start(const doctest::TestCaseData& tc) override { current_ = &tc; }
  void test_case_reenter(const doctest::TestCaseData&) override {}
  void test_case_end(const doctest::CurrentTestCaseStats& st) override {
    if (st.numAssertsCurrentTest == 0 && current_) empty_test_cases().push_back(current_->m_name);
  }
  void test_case_exception(const doctest::TestCaseException&) override {}
  void subcase_start(const doctest::SubcaseSignature&) override {}
  void subcase_end() override {}
  void log_assert(const doctest::AssertData&) override {}
  void log_message(const doctest::MessageData&) override {}
  void test_case_skipped(const doctest::TestCaseData&) override {}

 private:
  const doctest::TestCaseData* current_ = nullptr;
};
REGISTER_LISTENER("no_empty_test_cases", 1, NoEmptyTestCases);

}  // namespace

int main(int argc, char** argv) {
  doctest::Context context(argc, argv);
  int result = context.run();
  if (context.shouldExit() || result != 0) return result;
  int missing = memsnap::test::realdata_missing();
  if (const char* no_skip = std::getenv("MEMSNAP_NO_SKIP"); missing && no_skip && std::string(no_skip) == "1") {
    std::printf(
        "FAILED: %s holds no real snapshot (%d look-ups found none), and a skip is a failure here"
        " (MEMSNAP_NO_SKIP=1)\n",
        memsnap::test::realdata().string().c_str(), missing);
    return 1;
  }
  if (missing) {
    std::printf("SKIPPED: %s holds no real snapshot (%d look-ups by the real-data test cases found none)\n",
                memsnap::test::realdata().string().c_str(), missing);
    return 77;
  }
  if (!empty_test_cases().empty()) {
    for (const auto& name : empty_test_cases()) std::printf("FAILED: ran without an assertion: %s\n", name.c_str());
    return 1;
  }
  return 0;
}
