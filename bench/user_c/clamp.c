void clamp(int n, double *x, double lo, double hi)
{
  for (int i = 0; i < n; i++) {
    if (x[i] < lo) x[i] = lo;
    else if (x[i] > hi) x[i] = hi;
  }
}
