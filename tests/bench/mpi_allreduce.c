/* Reference for `gossipctl bench allreduce`: OpenMPI's MPI_Allreduce (float
 * sum, in place) on the same integer-valued inputs, timed the same way: a
 * barrier before each repetition, the slowest rank's time per repetition,
 * the median over repetitions. Prints one JSON line per size.
 *
 *   mpirun -np P --mca btl tcp,self ./mpi_allreduce --floats N [--floats N2 ...] --reps R
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float input(size_t rank, size_t i) { return (float)((i * 7 + rank * 13) % 101); }

static int cmp_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

static void bench(size_t floats, int reps, int warmup, int rank, int procs) {
  float* data = malloc(floats * sizeof(float) + 1);
  float* in = malloc(floats * sizeof(float) + 1);
  float* expected = calloc(floats + 1, sizeof(float));
  double* times = malloc(sizeof(double) * (size_t)reps);
  for (size_t i = 0; i < floats; ++i) in[i] = input((size_t)rank, i);
  for (int r = 0; r < procs; ++r)
    for (size_t i = 0; i < floats; ++i) expected[i] += input((size_t)r, i);
  int exact = 1;
  for (int rep = 0; rep < warmup + reps; ++rep) {
    memcpy(data, in, floats * sizeof(float));
    MPI_Barrier(MPI_COMM_WORLD);
    const double t0 = MPI_Wtime();
    MPI_Allreduce(MPI_IN_PLACE, data, (int)floats, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    double t = MPI_Wtime() - t0, slowest = 0;
    MPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rep >= warmup) times[rep - warmup] = slowest;
    exact = exact && memcmp(data, expected, floats * sizeof(float)) == 0;
  }
  int all_exact = 0;
  MPI_Reduce(&exact, &all_exact, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    qsort(times, (size_t)reps, sizeof(double), cmp_double);
    const double median = times[reps / 2];
    printf(
        "{\"bench\":\"allreduce\",\"impl\":\"mpi\",\"procs\":%d,\"floats\":%zu,\"seconds\":%.6f,"
        "\"algbw_gbps\":%.4f,\"min_seconds\":%.6f,\"exact\":%s}\n",
        procs, floats, median, (double)floats * sizeof(float) / median * 1e-9, times[0],
        all_exact ? "true" : "false");
    fflush(stdout);
  }
  free(data);
  free(in);
  free(expected);
  free(times);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, procs = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &procs);
  int reps = 10, warmup = 2;
  size_t sizes[32];
  int nsizes = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--floats") == 0 && nsizes < 32)
      sizes[nsizes++] = strtoull(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--reps") == 0)
      reps = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--warmup") == 0)
      warmup = atoi(argv[i + 1]);
  }
  if (nsizes == 0 || reps < 1) {
    if (rank == 0)
      fprintf(stderr, "usage: mpi_allreduce --floats N [--floats N ...] [--reps R] [--warmup W]\n");
    MPI_Finalize();
    return 2;
  }
  for (int s = 0; s < nsizes; ++s) bench(sizes[s], reps, warmup, rank, procs);
  MPI_Finalize();
  return 0;
}
