from shapes import scale


def test_scale_up():
    assert scale([1, 2], 3) == [3, 6]
