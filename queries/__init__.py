"""Queries: what the streaming job computes. Here first the Nexmark queries' reference implementations in pandas
(`nexmark_reference`), against which the Spark versions are checked for exact equality."""
