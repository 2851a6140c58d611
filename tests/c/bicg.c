/* bicg: s = A^T*r; q = A*p */
#ifndef M
# define M 9000
# define N 9500
#endif

void kernel_bicg(double A[N][M], double s[M], double q[N], double p[M], double r[N])
{
  int i, j;
#pragma scop
  for (i = 0; i < M; i++)
    s[i] = 0;
  for (i = 0; i < N; i++) {
    q[i] = 0.0;
    for (j = 0; j < M; j++) {
      s[j] = s[j] + r[i] * A[i][j];
      q[i] = q[i] + A[i][j] * p[j];
    }
  }
#pragma endscop
}
