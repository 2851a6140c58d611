/* atax: y = A^T*(A*x); the scalar t is expanded over i */
#ifndef M
# define M 8000
# define N 9000
#endif

void kernel_atax(int m, int n, double A[M][N], double x[N], double y[N])
{
  int i, j;
#pragma scop
  for (i = 0; i < n; i++)
    y[i] = 0;
  for (i = 0; i < m; i++) {
    double t = 0.0;
    for (j = 0; j < n; j++)
      t = t + A[i][j] * x[j];
    for (j = 0; j < n; j++)
      y[j] = y[j] + A[i][j] * t;
  }
#pragma endscop
}
