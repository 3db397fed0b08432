"""Presentation: tables for the terminal and the machine formats, and plots."""
