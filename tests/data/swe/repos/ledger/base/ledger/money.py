"""Money in integer cents."""


def add(*amounts):
    return sum(amounts)


def split(total, parts):
    """Split `total` cents into `parts` shares that differ by at most one cent and add up to `total`."""
    share = total // parts
    return [share] * parts


def apply_discount(cents, percent):
    """`cents` less `percent` per cent, the discount rounded half up to a whole cent."""
    return cents - int(cents * percent / 100)
