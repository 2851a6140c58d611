void transpose(int n, int m, const float *in, float *out)
{
  for (int i = 0; i < n; i++)
    for (int j = 0; j < m; j++)
      out[j * n + i] = in[i * m + j];
}
