/* Integer matrix product with a 64-bit accumulator (no overflow for 32-bit inputs). */
void mm_int(int n, const int *a, const int *b, long *c)
{
  for (int i = 0; i < n; i++)
    for (int j = 0; j < n; j++) {
      long acc = 0;
      for (int k = 0; k < n; k++)
        acc += (long)a[i * n + k] * b[k * n + j];
      c[i * n + j] = acc;
    }
}
