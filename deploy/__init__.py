"""SchedMate on live clusters: the HTTP service, the log daemon, Slurm and Ray."""
