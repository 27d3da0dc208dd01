"""The Talking Turns judge: a GRU over two-speaker voice activity (and words) that labels every
40 ms chunk (C, BC, T, I, NA) and predicts future voice activity: its features, labels and
targets, model, training, evaluation, thresholds, the five Talking Turns metrics, streaming, and
`python -m judge`. The naturalness scorers (`naturalness`) and the predictor benchmarks
(`predictorbench`) build on it.
"""
