from ledger import add, apply_discount, split


def test_add():
    assert add(100, 250, 5) == 355


def test_split_even():
    assert split(900, 3) == [300, 300, 300]


def test_discount_whole():
    assert apply_discount(1000, 10) == 900


def test_split_keeps_total():
    assert split(1000, 3) == [334, 333, 333]


def test_discount_rounds_half_up():
    assert apply_discount(999, 15) == 849
