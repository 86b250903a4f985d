"""What gpuprims.profile runs under Nsight Compute: one variant, once.

    python -m gpuprims._profile_driver FAMILY VARIANT SIZE DTYPE OP

SIZE is an element count (1048576) or a shape (8192x8192).  The input is
uploaded first (copies, no kernels), so every kernel ncu sees is the
variant's.
"""
import sys


def main(argv) -> int:
    family, variant, size, dtype, op = argv
    import gpuprims
    from gpuprims._family import get, random_input

    fam = get(family)
    shape = tuple(int(s) for s in size.split("x"))
    d = gpuprims.to_device(random_input(fam.input_shape(shape if len(shape) > 1 else shape[0]), dtype))
    fam.apply(d, variant, op=op)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
