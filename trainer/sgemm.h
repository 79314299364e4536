#pragma once

#include <cblas.h>

namespace gossipd::trainer {

// OpenBLAS takes a buffer for each call in flight from a table its build
// sized (Debian's 0.3.21: NUM_THREADS 64); past it, it adds an auxiliary
// array ("precompiled NUM_THREADS exceeded, adding auxiliary array for
// thread metadata"), and 0.3.21's corrupted the heap here: gossipctl
// simulate with 256 members in one process died with signal 11 in 4 runs of
// 6, each after that line. So the trainer's calls in flight in a process are
// held under kMaxSgemmInFlight (a caller past it waits on a semaphore): more
// at once would not run faster on the cores there are.
constexpr int kMaxSgemmInFlight = 32;

// C = alpha op(A) op(B) + beta C, row major: cblas_sgemm, under the gate.
void sgemm(CBLAS_TRANSPOSE trans_a, CBLAS_TRANSPOSE trans_b, int m, int n, int k, float alpha, const float* a,
           int lda, const float* b, int ldb, float beta, float* c, int ldc);

}  // namespace gossipd::trainer
