"""Tools for running and exercising Mars on one machine, not part of a deployment: the local
cluster launcher (`devtools.local`) and the synthetic data generator (`devtools.gen`)."""
