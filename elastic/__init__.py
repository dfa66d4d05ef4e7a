"""The project's command line (`elastic`, elastic/cli.py): one entry point for what a user does with the pipeline."""
