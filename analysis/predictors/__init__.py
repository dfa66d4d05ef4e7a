"""Load predictors for the preventive controller (AUTOSCALE): a declared dataset, leave-one-trace-out evaluation,
registration and the champion / conservative aliases, and scoring a registered model on a user's own series.
`python -m analysis.predictors --help` lists the commands."""
