"""Scenario kinds beyond the DataLoader pipeline of the core: online serving and LLM generation."""
