/* 3mm: G = (A*B)*(C*D); no pragma: the whole function body is the region */
#ifndef NI
# define NI 400
# define NJ 500
# define NK 600
# define NL 700
# define NM 800
#endif

void kernel_3mm(double E[NI][NJ], double A[NI][NK], double B[NK][NJ], double F[NJ][NL],
                double C[NJ][NM], double D[NM][NL], double G[NI][NL])
{
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NJ; j++) {
      E[i][j] = 0.0;
      for (int k = 0; k < NK; ++k)
        E[i][j] += A[i][k] * B[k][j];
    }
  for (int i = 0; i < NJ; i++)
    for (int j = 0; j < NL; j++) {
      F[i][j] = 0.0;
      for (int k = 0; k < NM; ++k)
        F[i][j] += C[i][k] * D[k][j];
    }
  for (int i = 0; i < NI; i++)
    for (int j = 0; j < NL; j++) {
      G[i][j] = 0.0;
      for (int k = 0; k < NJ; ++k)
        G[i][j] += E[i][k] * F[k][j];
    }
}
