// Package initcost measures what creating a library's communicator costs
// on each rank, and agrees on it over the ranks: the init's wall time and,
// on a GPU, the drop in cuMemGetInfo's free memory across it (Meter, after
// a context synchronize, the context made beforehand so that it is not
// counted), and again including the library's first operations, since
// NCCL connects some buffers lazily. Agree gives every rank the slowest
// and median time and the largest memory figures.
package initcost
