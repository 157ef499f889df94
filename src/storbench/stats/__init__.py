"""Statistics over repetitions: summaries with confidence intervals, comparisons, drift, knees. Pure."""
