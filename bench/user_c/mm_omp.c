#define MIN(a,b) ((a) < (b) ? (a) : (b))
void mm(int n, double *restrict C, const double *restrict A, const double *restrict B)
{
#pragma omp parallel for
  for (int i = 0; i < n; i++)
    for (int k = 0; k < n; k++) {
      const double a = A[i*n + k];
#pragma omp simd
      for (int j = 0; j < n; j++)
        C[i*n + j] += a * B[k*n + j];
    }
}
