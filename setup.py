"""Install statecentric_jax: `pip install -e ".[test]"` (exact versions: add `-c constraints.txt`)."""

from setuptools import find_packages, setup

setup(
    name="statecentric_jax",
    version="0.1.0",
    description="State-centric generalized planning: learned transition models over WL embeddings.",
    packages=find_packages(include=["statecentric_jax", "statecentric_jax.*"]),
    package_data={"statecentric_jax.problems": ["pddl/*.pddl"], "statecentric_jax.experiments": ["paper_table1.csv"]},
    license="Apache-2.0",
    python_requires=">=3.10",
    install_requires=[
        "absl-py>=2.1",
        "flax>=0.12,<0.13",
        "jax>=0.10,<0.11",
        "ml_collections>=1.0",
        "numpy>=2.0,<3",
        "optax>=0.2.8,<0.3",
        "orbax-checkpoint>=0.12,<0.13",
        "pyperplan==2.1",
        "tqdm>=4.66",
        "psutil>=5.9",  # the resident memory a decoding memory limit reads (search/limits.py)
        "up-fast-downward==1.0.0",
        "wlplan==2.1.0",
        "xgboost>=3.0,<4",
        "scipy>=1.12",  # its OpenBLAS runs jaxlib's CPU QR (learning/lstm.py)
        "threadpoolctl>=3.1",  # one BLAS thread for the LSTM's QR initialisation (learning/lstm.py)
        "matplotlib>=3.8",
    ],
    extras_require={
        "test": ["pytest>=8", "ruff>=0.17,<0.18", "mypy>=2.0"],
        "dev": ["pre-commit>=4"],
        "cuda": ["jax[cuda12]"],
        "ray": ["ray>=2.40,<3"],  # launch/sweep.py and launch/evaluate.py --backend=ray
    },
)
