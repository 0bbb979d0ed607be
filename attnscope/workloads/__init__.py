"""What a measurement runs on: inputs, the fp64 reference, and (in flops.py) the FLOP count."""
