"""Admission and placement rules, shared by the simulated cluster and the schedule estimator."""
