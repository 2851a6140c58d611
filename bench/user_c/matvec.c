void matvec(int n, int m, const double *A, const double *x, double *y)
{
  for (int i = 0; i < n; i++) {
    double s = 0.0;
    for (int j = 0; j < m; j++)
      s += A[i * m + j] * x[j];
    y[i] = s;
  }
}
