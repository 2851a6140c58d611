#define MIN(a,b) ((a) < (b) ? (a) : (b))
#define MAX(a,b) ((a) > (b) ? (a) : (b))
#define B 32
void blocked(int n, double A[n][n], double T[n][n], double *x)
{
  for (int ii = 0; ii < n; ii += B)
    for (int jj = 0; jj < n; jj += B)
      for (int i = ii; i < MIN(ii + B, n); i++)
        for (int j = jj; j < MIN(jj + B, n); j++)
          T[j][i] = A[i][j];
  for (int i = n - 1; i >= 0; i -= 3)
    x[i] = 2.0 * x[i];
  for (int i = MAX(1, 0); i <= n - 2; i = i + 2)
    x[i] += x[i - 1];
}
