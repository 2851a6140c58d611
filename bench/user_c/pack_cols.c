/* Copy a row-major matrix into column-major order, the destination written in order. */
void pack_cols(int n, int m, const double *A, double *packed)
{
  int k = 0;
  for (int j = 0; j < m; j++)
    for (int i = 0; i < n; i++)
      packed[k++] = A[i * m + j];
}
