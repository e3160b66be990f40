"""Run-time services of the studies: the results store and the parallel back-ends."""
