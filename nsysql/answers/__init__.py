"""Answers built from queries: overview, findings, summary, communication, diff, several exports."""
