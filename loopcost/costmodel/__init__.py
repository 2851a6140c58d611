"""The learned cost model: recursive LSTMs over the loop tree, training, evaluation, baselines."""
