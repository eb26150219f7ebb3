"""Arnold: topology-aligned placement of LLM pre-training jobs (He et al., spec `arnold.md`).

Models (pure functions and dataclasses): `topology` (node → leaf → minipod on the engine's levels),
`groups` (DP×PP communication matrix, spreads), `mip` + `planner` (unit bin-packing MIP and rank
materialisation), `baselines` (best-fit, random-fit, GPU-packing, topo-aware, naive), `slowdown`
(placement-dependent step time), `affinity` (alpha/beta and exposed shares per profile), `jct`.
Engine policy: `policy.ArnoldPolicy` (registered as "arnold"). Reproduction:
`experiment.run_arnold_experiment`; decision time per round: `timing.decision_times`.
Submodules are imported on use, so importing this package stays cheap.
"""
