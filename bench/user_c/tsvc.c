#define LEN 32000
#define LEN2 256
typedef float real_t;
real_t a[LEN], b[LEN], c[LEN], d[LEN];
real_t aa[LEN2][LEN2], bb[LEN2][LEN2];
const real_t half = 0.5f;
int iterations = 10;
real_t scale;

void s000(void)
{
  for (int nl = 0; nl < iterations; nl++)
    for (int i = 0; i < LEN; i++)
      a[i] = b[i] + half * c[i] + scale;
}

void s1115(void)
{
  for (int i = 0; i < LEN2; i++)
    for (int j = 0; j < LEN2; j++)
      aa[i][j] = aa[i][j] * bb[j][i] + aa[i][j];
}
