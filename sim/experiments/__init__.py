"""Case-study experiments (spec §8): the same trace and cluster, a reference scheduler with and
without the SchedMate adapters. `common` holds the plumbing they share."""
