void dot(int n, const float *x, const float *y, float *out)
{
  *out = 0.0f;
  for (int i = 0; i < n; i++)
    *out += x[i] * y[i];
}
