"""The NOVA study: two-tier near-memory processing for attention-SSM-MoE hybrids."""
