void relu_bias(int n, int m, float *out, const float *in, const float *bias)
{
  for (int i = 0; i <= n - 1; i++) {
    for (int j = 0; j < m; j += 1) {
      float v = in[i*m + j] + bias[j];
      out[i*m + j] = v > 0.0f ? v : 0.0f;
    }
  }
}
