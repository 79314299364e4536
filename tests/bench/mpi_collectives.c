/* Reference for `gossipctl bench allreduce|allgather|reduce-scatter|pingpong`:
 * OpenMPI's MPI_Allreduce (float sum, in place), MPI_Allgather (in place),
 * MPI_Reduce_scatter_block and an MPI_Send/MPI_Recv pingpong on the same
 * integer-valued inputs, sized and timed the same way: --bytes N is the
 * buffer each rank holds (nccl-tests' convention: allreduce N in and out;
 * reduce-scatter N in, N/P out; allgather N/P contributed, N out; pingpong
 * one message of N); a barrier before each repetition, the slowest rank's
 * time per repetition (pingpong: half rank 0's round trip), the median and
 * the minimum over repetitions. Prints one JSON line per size.
 *
 *   mpirun -np P --mca btl tcp,self ./mpi_collectives --op OP --bytes N [--bytes N2 ...] [--reps R]
 *   (OP: allreduce allgather reduce-scatter pingpong; --floats N = --bytes 4N)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kAllreduce, kAllgather, kReduceScatter, kPingpong };
static const char* const kOps[] = {"allreduce", "allgather", "reduce-scatter", "pingpong"};

static float input(size_t rank, size_t i) { return (float)((i * 7 + rank * 13) % 101); }

static int cmp_double(const void* a, const void* b) {
  const double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

/* The buffers of one size; `count` floats per rank, `block` = count / P. */
struct Bufs {
  float *data, *out, *expected;
  size_t count, block;
};

/* Elements per rank: bytes / 4; for the block calls a multiple of P, at least P. */
static size_t floats_for(int op, size_t bytes, int procs) {
  const size_t floats = bytes / sizeof(float), p = (size_t)procs;
  if (op != kAllgather && op != kReduceScatter) return floats;
  return floats / p * p < p ? p : floats / p * p;
}

static void setup(int op, struct Bufs* b, int procs) {
  b->data = calloc(b->count + 1, sizeof(float));
  b->out = calloc(b->count + 1, sizeof(float));
  b->expected = calloc(b->count + 1, sizeof(float));
  for (size_t i = 0; i < b->count; ++i) {
    if (op == kAllgather) {
      b->expected[i] = input(i / b->block, i);
    } else if (op == kPingpong) {
      b->expected[i] = input(0, i);
    } else {
      for (int r = 0; r < procs; ++r) b->expected[i] += input((size_t)r, i);
    }
  }
}

/* Before each repetition (untimed): inputs in place, results poisoned. */
static void reset(int op, struct Bufs* b, int rank) {
  for (size_t i = 0; i < b->count; ++i) {
    b->data[i] = input((size_t)rank, i);
    b->out[i] = -1.0f;
  }
  if (op == kAllgather) {
    for (size_t i = 0; i < b->count; ++i)
      b->data[i] = i / b->block == (size_t)rank ? input((size_t)rank, i) : -1.0f;
  } else if (op == kPingpong) {
    for (size_t i = 0; i < b->count; ++i) b->data[i] = rank == 0 ? input(0, i) : -1.0f;
  }
}

/* One timed repetition; returns the seconds this rank reports. */
static double run(int op, struct Bufs* b, int rank) {
  const double t0 = MPI_Wtime();
  const int n = (int)b->count, blk = (int)b->block;
  if (op == kAllreduce) {
    MPI_Allreduce(MPI_IN_PLACE, b->data, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  } else if (op == kAllgather) {
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, b->data, blk, MPI_FLOAT, MPI_COMM_WORLD);
  } else if (op == kReduceScatter) {
    MPI_Reduce_scatter_block(b->data, b->out, blk, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
  } else if (rank == 0) {
    MPI_Send(b->data, n, MPI_FLOAT, 1, 0, MPI_COMM_WORLD);
    MPI_Recv(b->out, n, MPI_FLOAT, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else {
    MPI_Recv(b->data, n, MPI_FLOAT, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(b->data, n, MPI_FLOAT, 0, 1, MPI_COMM_WORLD);
  }
  const double t = MPI_Wtime() - t0;
  if (op == kPingpong) return rank == 0 ? t / 2 : 0;
  return t;
}

static int check(int op, const struct Bufs* b, int rank) {
  const size_t sz = sizeof(float);
  if (op == kReduceScatter) return memcmp(b->out, b->expected + (size_t)rank * b->block, b->block * sz) == 0;
  if (op == kPingpong) return memcmp(rank == 0 ? b->out : b->data, b->expected, b->count * sz) == 0;
  return memcmp(b->data, b->expected, b->count * sz) == 0;
}

static void bench(int op, size_t bytes, int reps, int warmup, int rank, int procs) {
  struct Bufs b;
  b.count = floats_for(op, bytes, procs);
  b.block = b.count / (size_t)procs;
  setup(op, &b, procs);
  double* times = malloc(sizeof(double) * (size_t)reps);
  int exact = 1;
  for (int rep = 0; rep < warmup + reps; ++rep) {
    reset(op, &b, rank);
    MPI_Barrier(MPI_COMM_WORLD);
    double t = run(op, &b, rank), slowest = 0;
    MPI_Reduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (rep >= warmup) times[rep - warmup] = slowest;
    exact = exact && check(op, &b, rank);
  }
  int all_exact = 0;
  MPI_Reduce(&exact, &all_exact, 1, MPI_INT, MPI_LAND, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    qsort(times, (size_t)reps, sizeof(double), cmp_double);
    const double median = times[reps / 2], moved = (double)(b.count * sizeof(float));
    printf(
        "{\"bench\":\"%s\",\"impl\":\"mpi\",\"path\":\"tcp\",\"procs\":%d,\"bytes\":%zu,\"seconds\":%.9f,"
        "\"min_seconds\":%.9f,\"algbw_gbps\":%.4f,\"exact\":%s}\n",
        kOps[op], procs, b.count * sizeof(float), median, times[0], median > 0 ? moved / median * 1e-9 : 0.0,
        all_exact ? "true" : "false");
    fflush(stdout);
  }
  free(b.data);
  free(b.out);
  free(b.expected);
  free(times);
}

static int op_named(const char* name) {
  for (int i = 0; i < 4; ++i)
    if (strcmp(name, kOps[i]) == 0) return i;
  return -1;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, procs = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &procs);
  int reps = 30, warmup = 2, op = kAllreduce;
  size_t sizes[32];
  int nsizes = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--bytes") == 0 && nsizes < 32)
      sizes[nsizes++] = strtoull(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--floats") == 0 && nsizes < 32)
      sizes[nsizes++] = strtoull(argv[i + 1], NULL, 10) * sizeof(float);
    else if (strcmp(argv[i], "--op") == 0)
      op = op_named(argv[i + 1]);
    else if (strcmp(argv[i], "--reps") == 0)
      reps = atoi(argv[i + 1]);
    else if (strcmp(argv[i], "--warmup") == 0)
      warmup = atoi(argv[i + 1]);
  }
  int bad = nsizes == 0 || reps < 1 || op < 0 || (op == kPingpong && procs != 2);
  for (int s = 0; s < nsizes; ++s) bad = bad || sizes[s] < sizeof(float);
  if (bad) {
    if (rank == 0)
      fprintf(stderr,
              "usage: mpi_collectives [--op allreduce|allgather|reduce-scatter|pingpong] --bytes N "
              "[--bytes N ...] [--reps R] [--warmup W]  (pingpong: 2 processes)\n");
    MPI_Finalize();
    return 2;
  }
  for (int s = 0; s < nsizes; ++s) bench(op, sizes[s], reps, warmup, rank, procs);
  MPI_Finalize();
  return 0;
}
