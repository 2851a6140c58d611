/* gesummv: y = alpha*A*x + beta*B*x, with two scalar accumulators per row */
#ifndef N
# define N 8500
#endif

void kernel_gesummv(double A[N][N], double B[N][N], double x[N], double y[N])
{
#pragma scop
  for (int i = 0; i < N; i++) {
    double t = 0.0, u;
    u = 0.0;
    for (int j = 0; j < N; j++) {
      t += A[i][j] * x[j];
      u += B[i][j] * x[j];
    }
    y[i] = 1.5 * t + 1.2 * u;
  }
#pragma endscop
}
