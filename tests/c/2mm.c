/* 2mm: D = alpha*A*B*C + beta*D */
#include <stdlib.h>
#define ALPHA 1.5
#define BETA 1.2
#ifndef NI
# define NI 600
# define NJ 700
# define NK 800
# define NL 900
#endif

void kernel_2mm(double tmp[NI][NJ], double A[NI][NK], double B[NK][NJ], double C[NJ][NL], double D[NI][NL])
{
  int i, j, k;
#pragma scop
  for (i = 0; i < NI; i++)
    for (j = 0; j < NJ; j++) {
      tmp[i][j] = 0.0;
      for (k = 0; k < NK; ++k)
        tmp[i][j] += ALPHA * A[i][k] * B[k][j];
    }
  for (i = 0; i < NI; i++)
    for (j = 0; j < NL; j++) {
      D[i][j] *= BETA;
      for (k = 0; k < NJ; ++k)
        D[i][j] += tmp[i][k] * C[k][j];
    }
#pragma endscop
}
