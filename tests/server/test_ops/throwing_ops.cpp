// libmyops_test_throwing_ops: an operator library whose loading throws, as a user's does
// when it defines a namespace that is already defined (here: myops, which libmyops
// defines; PyTorch allows one TORCH_LIBRARY block per namespace). The server must refuse
// it at start-up with an error naming the library, not abort.
#include <torch/library.h>

TORCH_LIBRARY(myops, m) {}
