"""Searching the schedule space: beam search, MCTS and random search, scored by a cost model or by measuring."""
