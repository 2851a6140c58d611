/* syrk on the lower triangle, written with affine ifs instead of triangular bounds */
#ifndef N
# define N 900
# define M 800
#endif

void kernel_syrk(double C[N][N], double A[N][M])
{
  int i, j, k;
#pragma scop
  for (i = 0; i < N; i++) {
    for (j = 0; j < N; j++)
      if (j <= i)
        C[i][j] *= 1.2;
    for (k = 0; k < M; k++)
      for (j = 0; j < N; j++)
        if (j < i + 1)
          C[i][j] += 1.5 * A[i][k] * A[j][k];
  }
#pragma endscop
}
