"""The compiled kernels (onemodel_viewer/ckernels.c); everything else is in pyproject.toml."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "onemodel_viewer.ckernels",
            ["onemodel_viewer/ckernels.c"],
            # no FMA contraction and no fast-math: the kernels' figures must be the same bits on every machine
            extra_compile_args=["-O3", "-ffp-contract=off", "-fno-fast-math", "-Wno-psabi"],
            optional=True,  # no compiler: the install still works and the numpy code runs instead
        )
    ]
)
