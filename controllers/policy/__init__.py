"""Scaling policies as rule sets (the SEEP thesis, Rouaux 2014, ch. 4): model, safe parser, fluent builder, evaluator.

Pure: no Spark, MLflow or I/O beyond reading the shipped catalogue, so policies are unit-tested in microseconds.
"""
from controllers.policy.builder import (
                                        above,
                                        absolute,
                                        below,
                                        factor,
                                        millis,
                                        minutes,
                                        nodes,
                                        percent,
                                        relative,
                                        rule,
                                        rules,
                                        seconds,
                                        tuples,
)
from controllers.policy.catalogue import catalogue_names, load_policy, resolve_policy
from controllers.policy.engine import Action, PolicyEngine
from controllers.policy.model import (
    METRICS,
    OPTIONS,
    Policy,
    PolicyOptions,
    Rule,
    Trigger,
    check_options,
    describe_options,
)
from controllers.policy.parse import PolicyError, parse_policy

__all__ = ["Action", "METRICS", "OPTIONS", "Policy", "PolicyEngine", "PolicyError", "PolicyOptions", "Rule", "Trigger",
           "above", "absolute", "below", "catalogue_names", "check_options", "describe_options", "factor",
           "load_policy", "millis", "minutes", "nodes", "parse_policy", "percent", "relative", "resolve_policy", "rule",
           "rules", "seconds", "tuples"]
