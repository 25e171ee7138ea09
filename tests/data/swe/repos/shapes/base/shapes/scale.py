def scale(values, factor):
    """Each value times `factor`; a negative factor mirrors, a factor of zero is refused."""
    if factor <= 0:
        raise ValueError(f"factor must be positive, got {factor}")
    return [v * factor for v in values]
