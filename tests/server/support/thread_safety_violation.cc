// Not part of any build that passes: a read of a guarded member without its lock, which
// the server's flags must refuse (clang's thread-safety analysis as errors). CTest's
// ThreadSafetyAnalysis.RefusesAnUnlockedRead builds it, as a server target, and passes
// only when the compiler names the missing lock (tests/server/CMakeLists.txt).
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace {

class Counter {
 public:
  int Read() { return value_; }  // Refused: value_ needs mu_ held.

 private:
  absl::Mutex mu_;
  int value_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace

int ThreadSafetyViolation() { return Counter().Read(); }
