void softmax_rows(int n, int m, double *x)
{
  for (int i = 0; i < n; i++) {
    double mx = x[i*m];
    for (int j = 1; j < m; j++)
      mx = fmax(mx, x[i*m + j]);
    double sum = 0.0;
    for (int j = 0; j < m; j++) {
      x[i*m + j] = exp(x[i*m + j] - mx);
      sum += x[i*m + j];
    }
    for (int j = 0; j < m; j++)
      x[i*m + j] /= sum;
  }
}
