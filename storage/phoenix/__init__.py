"""The spans pulled from Phoenix, each pull's place, and what was pushed back."""
