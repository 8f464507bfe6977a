"""The Slurm backend of the runner: one sbatch allocation per job, and a local cluster for CI."""
