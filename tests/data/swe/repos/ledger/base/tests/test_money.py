from ledger import add, apply_discount, split


def test_add():
    assert add(100, 250, 5) == 355


def test_split_even():
    assert split(900, 3) == [300, 300, 300]


def test_discount_whole():
    assert apply_discount(1000, 10) == 900
