/* PolyBench gemm with alpha and beta as scalar parameters */
#include <math.h>

#ifndef NI
#define NI 1000
#endif
#ifndef NJ
#define NJ 1100
#endif
#ifndef NK
#define NK 1200
#endif

void kernel_gemm(int ni, int nj, int nk, double alpha, double beta,
                 double C[NI][NJ], double A[NI][NK], double B[NK][NJ])
{
  int i, j, k;
#pragma scop
  for (i = 0; i < ni; i++) {
    for (j = 0; j < nj; j++)
      C[i][j] *= beta;
    for (k = 0; k < nk; k++)
      for (j = 0; j < nj; j++)
        C[i][j] += alpha * A[i][k] * B[k][j];
  }
#pragma endscop
}
