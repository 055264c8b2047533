"""The soundness wing: checking rules, auditing rule sets, verifying programs and bisecting to the
first unsound rule application, over one random-input generator (`inputs`)."""
