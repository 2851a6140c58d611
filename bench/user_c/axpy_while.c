/* y += a * x written with a while loop, and the mirror image of x added in with two counters. */
void axpy_while(long n, double a, const double *x, double *y, double *z)
{
  long i = 0;
  while (i < n) {
    y[i] += a * x[i];
    i++;
  }
  for (long lo = 0, hi = n - 1; lo < n; lo++, hi--)
    z[lo] = y[lo] + x[hi];
}
