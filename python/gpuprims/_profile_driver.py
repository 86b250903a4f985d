"""What gpuprims.profile runs under Nsight Compute: one variant, once.

    python -m gpuprims._profile_driver FAMILY VARIANT N_OR_ROWSxCOLS DTYPE OP

The input is uploaded first (copies, no kernels), so every kernel ncu sees
is the variant's.
"""
import sys


def main(argv) -> int:
    family, variant, size, dtype, op = argv
    import gpuprims
    from gpuprims._bench import random_input

    if family == "transpose":
        rows, cols = (int(s) for s in size.split("x"))
        d = gpuprims.to_device(random_input((rows, cols), dtype))
        gpuprims.transpose(d, variant=variant)
    else:
        d = gpuprims.to_device(random_input(int(size), dtype))
        if family == "reduce":
            gpuprims.reduce(d, op, variant=variant)
        else:
            gpuprims.scan(d, op, variant=variant)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
