/* gemm: C = beta*C + alpha*A*B, PolyBench's loop order, sizes as int parameters */
#include <math.h>
#define ALPHA 1.5
#define BETA 1.2
#ifndef NI
# define NI 1000
# define NJ 1100
# define NK 1200
#endif

void kernel_gemm(int ni, int nj, int nk, double C[NI][NJ], double A[NI][NK], double B[NK][NJ])
{
  int i, j, k;
#pragma scop
  for (i = 0; i < ni; i++) {
    for (j = 0; j < nj; j++)
      C[i][j] *= BETA;
    for (k = 0; k < nk; k++)
      for (j = 0; j < nj; j++)
        C[i][j] += ALPHA * A[i][k] * B[k][j];
  }
#pragma endscop
}
