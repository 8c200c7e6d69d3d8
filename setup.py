"""Install statecentric_jax: `pip install -e .[test]` (add `cuda` on a GPU machine)."""

from setuptools import find_packages, setup

setup(
    name="statecentric_jax",
    version="0.1.0",
    description="State-centric generalized planning: learned transition models over WL embeddings.",
    packages=find_packages(include=["statecentric_jax", "statecentric_jax.*"]),
    package_data={"statecentric_jax.problems": ["pddl/*.pddl"]},
    python_requires=">=3.10",
    install_requires=[
        "absl-py",
        "flax",
        "jax",
        "ml_collections",
        "numpy",
        "optax",
        "orbax-checkpoint",
        "pyperplan==2.1",
        "tqdm",
        "up-fast-downward==1.0.0",
        "wlplan==2.1.0",
        "xgboost>=2.0",
        "matplotlib",
    ],
    extras_require={
        "test": ["pytest"],
        "cuda": ["jax[cuda12]"],
        "ray": ["ray[default]>=2.40,<3"],  # launch/sweep.py and launch/evaluate.py --backend=ray
    },
)
