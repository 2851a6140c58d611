#include <math.h>

/* A naive discrete Fourier transform of a real signal: the angle is computed from the loop counters. */
void dft(int n, const double *x, double *re, double *im)
{
  for (int k = 0; k < n; k++) {
    double sr = 0.0, si = 0.0;
    for (int t = 0; t < n; t++) {
      double angle = 2.0 * M_PI * t * k / n;
      sr += x[t] * cos(angle);
      si -= x[t] * sin(angle);
    }
    re[k] = sr;
    im[k] = si;
  }
}
