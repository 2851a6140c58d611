#include <math.h>
double norm2(int n, const double *x)
{
  double s = 0.0;
  for (int i = 0; i < n; i++)
    s += x[i] * x[i];
  return sqrt(s);
}
