"""Money in integer cents."""


def add(*amounts):
    return sum(amounts)


def split(total, parts):
    """Split `total` cents into `parts` shares that differ by at most one cent and add up to `total`."""
    share, rest = divmod(total, parts)
    return [share + 1] * rest + [share] * (parts - rest)


def apply_discount(cents, percent):
    """`cents` less `percent` per cent, the discount rounded half up to a whole cent."""
    return cents - int(cents * percent / 100)
