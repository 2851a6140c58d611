"""Program + schedule -> a tree of named, versioned feature vectors (what the cost model reads)."""
