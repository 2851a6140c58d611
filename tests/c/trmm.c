/* trmm: B = alpha*A^T*B with A unit lower triangular; the k loop runs downwards */
#ifndef M
# define M 600
# define N 800
#endif

void kernel_trmm(double A[M][M], double B[M][N])
{
  int i, j, k;
#pragma scop
  for (i = 0; i < M; i++)
    for (j = 0; j < N; j++) {
      for (k = M - 1; k > i; k--)
        B[i][j] += A[k][i] * B[k][j];
      B[i][j] = 1.5 * B[i][j];
    }
#pragma endscop
}
