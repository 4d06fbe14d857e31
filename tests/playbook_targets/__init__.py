"""Targets for the playbook tests: Debian roots, fake vendor packages and
a way to run the real playbooks against them through ansible-runner."""
