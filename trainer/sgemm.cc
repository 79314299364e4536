#include "trainer/sgemm.h"

#include <semaphore>

namespace gossipd::trainer {
namespace {

std::counting_semaphore<kMaxSgemmInFlight>& gate() {
  static std::counting_semaphore<kMaxSgemmInFlight> g(kMaxSgemmInFlight);
  return g;
}

// Holds one of the gate's places for the length of a call.
class InFlight {
 public:
  InFlight() { gate().acquire(); }
  ~InFlight() { gate().release(); }
  InFlight(const InFlight&) = delete;
  InFlight& operator=(const InFlight&) = delete;
};

}  // namespace

void sgemm(CBLAS_TRANSPOSE trans_a, CBLAS_TRANSPOSE trans_b, int m, int n, int k, float alpha, const float* a,
           int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  const InFlight held;
  cblas_sgemm(CblasRowMajor, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

}  // namespace gossipd::trainer
