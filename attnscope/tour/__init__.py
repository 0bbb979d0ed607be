"""`attnscope tour`: the study replayed on this machine, one guess before every reveal.

``steps`` holds the step table (setup, question, how to measure, why, the H200 figures with their
source); ``session`` asks, measures through :mod:`attnscope.api`, scores with the ``--guess`` noise
rules and writes the transcript; ``strip`` draws a fingerprint's kernels in time order.
"""
