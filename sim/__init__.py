"""The simulated world: artefacts and logs for trace jobs, insight sources, experiments."""
