"""Scoring a latency model's predictions against the labels."""
