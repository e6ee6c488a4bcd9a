"""One module per op family, each with `define(op) -> TeKernel`: the op's TFLite reference arithmetic in TE."""
