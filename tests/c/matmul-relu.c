/* matmul-relu in float32: C = A*B, then R = max(C - k*bias, 0) */
#include <math.h>
#ifndef M
# define M 1000
# define N 1100
# define K 1200
#endif

void matmul_relu(float A[M][K], float B[K][N], float C[M][N], float bias[N], float R[M][N])
{
#pragma scop
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++) {
      C[i][j] = 0.0f;
      for (int k = 0; k < K; k++)
        C[i][j] += A[i][k] * B[k][j];
    }
  for (int i = 0; i < M; i++)
    for (int j = 0; j < N; j++)
      R[i][j] = fmaxf(C[i][j] - (float) K * bias[j], 0.0f);
#pragma endscop
}
