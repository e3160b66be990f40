"""The HYDRA study: chiplet design-space exploration for hybrid LLM serving."""
