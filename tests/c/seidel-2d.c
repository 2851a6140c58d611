/* seidel-2d: in place */
#ifndef TSTEPS
# define TSTEPS 20
# define N 1000
#endif

void kernel_seidel_2d(double A[N][N])
{
  int t, i, j;
#pragma scop
  for (t = 0; t <= TSTEPS - 1; t++)
    for (i = 1; i <= N - 2; i++)
      for (j = 1; j <= N - 2; j++)
        A[i][j] = (A[i-1][j-1] + A[i-1][j] + A[i-1][j+1]
                   + A[i][j-1] + A[i][j] + A[i][j+1]
                   + A[i+1][j-1] + A[i+1][j] + A[i+1][j+1]) / 9.0;
#pragma endscop
}
