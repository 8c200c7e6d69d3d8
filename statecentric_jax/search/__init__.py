"""Decoding: search over true symbolic successors, guided by a learned transition model."""
