void stencil(unsigned n, double *restrict out, const double *restrict in)
{
  for (unsigned i = 1; i < n - 1; i++)
    for (unsigned j = 1; j < n - 1; j++)
      out[i*n + j] = 0.25 * (in[(i-1)*n + j] + in[(i+1)*n + j] + in[i*n + j - 1] + in[i*n + j + 1]);
}
