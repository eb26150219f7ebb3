def create_diffusion(timestep_respacing, noise_schedule="linear", diffusion_steps=1000, learn_sigma=True):
    """Gaussian diffusion with 1000 training timesteps (these are noise levels, not training steps)."""
    from .gaussian_diffusion import GaussianDiffusion, get_named_beta_schedule
    return GaussianDiffusion(betas=get_named_beta_schedule(noise_schedule, diffusion_steps))
